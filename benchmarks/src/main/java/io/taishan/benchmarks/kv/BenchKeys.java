package io.taishan.benchmarks.kv;

import java.util.SplittableRandom;

/**
 * Keys and values of the benchmarks. A key is 16 bytes: a mixed 8-byte prefix, so that consecutive
 * indexes land all over the key space as hashed Flink keys do, then the index itself, so keys are
 * unique and can be recomputed from the index.
 */
final class BenchKeys {
    static final int KEY_BYTES = 16;

    private BenchKeys() {}

    static byte[] key(long index) {
        byte[] key = new byte[KEY_BYTES];
        writeLong(key, 0, mix(index));
        writeLong(key, 8, index);
        return key;
    }

    /** Random bytes, so that the store's compression does not shrink the data below its size. */
    static byte[] randomValue(SplittableRandom random, int bytes) {
        byte[] value = new byte[bytes];
        for (int i = 0; i < bytes; i += 8) {
            long bits = random.nextLong();
            for (int j = i; j < Math.min(bytes, i + 8); j++) {
                value[j] = (byte) bits;
                bits >>>= 8;
            }
        }
        return value;
    }

    /** SplitMix64's finalizer: a bijection, so distinct indexes give distinct prefixes. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    private static void writeLong(byte[] target, int offset, long value) {
        for (int i = 7; i >= 0; i--) {
            target[offset + i] = (byte) value;
            value >>>= 8;
        }
    }
}
