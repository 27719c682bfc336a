package io.taishan.benchmarks.state;

import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.ArraySampler;
import org.apache.commons.rng.sampling.distribution.DiscreteSampler;
import org.apache.commons.rng.sampling.distribution.RejectionInversionZipfSampler;
import org.apache.commons.rng.simple.RandomSource;

/**
 * Keys and values drawn before the trial, as in Flink's {@code StateBenchmarkConstants}, so that no
 * sampling is timed: the loaded keys {@code 0 .. n-1} and as many never-loaded keys {@code n ..
 * 2n-1}, each shuffled, and one sequence of {@value #SEQUENCE_LENGTH} positions in them, drawn
 * uniformly or by Zipf. Operation {@code i} uses position {@code i} of the sequence, so a loaded
 * key and an absent key of the same operation follow the same pattern. Seeded: every backend and
 * every run touches the same keys in the same order.
 */
final class BenchmarkKeys {
    /** User keys per map, as Flink's {@code MAP_KEY_COUNT}. */
    static final int MAP_KEY_COUNT = 10;

    static final double ZIPF_EXPONENT = 0.99;

    /** Long enough that no backend here repeats it within a 1 s iteration except the heap's. */
    static final int SEQUENCE_LENGTH = 1 << 20;

    private static final int VALUE_COUNT = 1 << 16;
    private static final long SEED = 20_251_130L;

    final int setupKeyCount;
    private final long[] setupKeys;
    private final long[] newKeys;
    private final int[] sequence;
    private final long[] values;
    private final long[] mapKeys;
    private final double[] mapValues;

    BenchmarkKeys(int setupKeyCount, KeyAccess access) {
        UniformRandomProvider random = RandomSource.XO_RO_SHI_RO_128_PP.create(SEED);
        this.setupKeyCount = setupKeyCount;
        this.setupKeys = ArraySampler.shuffle(random, range(0, setupKeyCount));
        this.newKeys = ArraySampler.shuffle(random, range(setupKeyCount, setupKeyCount));
        this.values = random.longs(VALUE_COUNT).toArray();
        this.mapKeys = ArraySampler.shuffle(random, range(0, MAP_KEY_COUNT));
        this.mapValues = random.doubles(MAP_KEY_COUNT).toArray();
        this.sequence = new int[SEQUENCE_LENGTH];
        if (access == KeyAccess.ZIPF) {
            // Rank 1 is the hottest; ranks index the shuffled keys, so hot keys are random keys.
            DiscreteSampler zipf =
                    RejectionInversionZipfSampler.of(random, setupKeyCount, ZIPF_EXPONENT);
            for (int i = 0; i < SEQUENCE_LENGTH; i++) {
                sequence[i] = zipf.sample() - 1;
            }
        } else {
            for (int i = 0; i < SEQUENCE_LENGTH; i++) {
                sequence[i] = random.nextInt(setupKeyCount);
            }
        }
    }

    private static long[] range(long from, int count) {
        long[] range = new long[count];
        for (int i = 0; i < count; i++) {
            range[i] = from + i;
        }
        return range;
    }

    /** The loaded keys in load order (0, 1, 2, ...): loading needs no sequence. */
    long loadKey(int index) {
        return index;
    }

    /** The loaded key of operation {@code op}. */
    long setupKey(int op) {
        return setupKeys[sequence[op & (SEQUENCE_LENGTH - 1)]];
    }

    /** A key that was never loaded, for operation {@code op}. */
    long newKey(int op) {
        return newKeys[sequence[op & (SEQUENCE_LENGTH - 1)]];
    }

    long value(int index) {
        return values[index & (VALUE_COUNT - 1)];
    }

    long mapKey(int index) {
        return mapKeys[index % MAP_KEY_COUNT];
    }

    /** A user key that no map holds. */
    long absentMapKey(int index) {
        return MAP_KEY_COUNT + mapKey(index);
    }

    double mapValue(int index) {
        return mapValues[index % MAP_KEY_COUNT];
    }
}
