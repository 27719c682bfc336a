package io.taishan.benchmarks.state;

import java.util.Random;

/**
 * Keys and values drawn in advance, as in Flink's {@code StateBenchmarkConstants}: shuffled
 * pre-loaded keys, as many shuffled keys never loaded, twice as many shuffled values, a small set
 * of map user keys. Seeded, so two runs touch keys in the same order.
 */
final class BenchmarkKeys {
    /** User keys per map, as Flink's {@code MAP_KEY_COUNT}. */
    static final int MAP_KEY_COUNT = 10;

    private static final long SEED = 20_251_130L;

    final int setupKeyCount;

    /** The keys loaded before the measurement: {@code 0 .. setupKeyCount-1}, shuffled. */
    final long[] setupKeys;

    /** Keys that were never loaded: {@code setupKeyCount .. 2*setupKeyCount-1}, shuffled. */
    final long[] newKeys;

    final long[] values;
    final long[] mapKeys;
    final double[] mapValues;

    BenchmarkKeys(int setupKeyCount) {
        Random random = new Random(SEED);
        this.setupKeyCount = setupKeyCount;
        this.setupKeys = shuffledRange(0, setupKeyCount, random);
        this.newKeys = shuffledRange(setupKeyCount, setupKeyCount, random);
        this.values = shuffledRange(0, 2 * setupKeyCount, random);
        this.mapKeys = shuffledRange(0, MAP_KEY_COUNT, random);
        this.mapValues = random.doubles(MAP_KEY_COUNT).toArray();
    }

    private static long[] shuffledRange(long from, int count, Random random) {
        long[] range = new long[count];
        for (int i = 0; i < count; i++) {
            range[i] = from + i;
        }
        for (int i = count - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            long swap = range[i];
            range[i] = range[j];
            range[j] = swap;
        }
        return range;
    }

    long setupKey(int index) {
        return setupKeys[index % setupKeys.length];
    }

    long newKey(int index) {
        return newKeys[index % newKeys.length];
    }

    long value(int index) {
        return values[index % values.length];
    }

    long mapKey(int index) {
        return mapKeys[index % MAP_KEY_COUNT];
    }

    double mapValue(int index) {
        return mapValues[index % MAP_KEY_COUNT];
    }
}
