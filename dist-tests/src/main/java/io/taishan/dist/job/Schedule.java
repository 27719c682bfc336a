package io.taishan.dist.job;

import java.io.Serializable;

/**
 * The job's whole input as a pure function of the record index: record {@code i} of {@code keys *
 * recordsPerKey} belongs to key {@code i % keys} and carries {@link #value(long)}. What a key ends
 * with depends only on which records it got, never on their order, so a test computes it without
 * Flink whatever the parallelism, the interleaving of the source splits or the restores.
 */
public final class Schedule implements Serializable {
    private static final long serialVersionUID = 1L;

    private final int keys;
    private final int recordsPerKey;

    public Schedule(int keys, int recordsPerKey) {
        if (keys < 1 || recordsPerKey < 1) {
            throw new IllegalArgumentException("need keys >= 1 and recordsPerKey >= 1");
        }
        this.keys = keys;
        this.recordsPerKey = recordsPerKey;
    }

    public int keys() {
        return keys;
    }

    public int recordsPerKey() {
        return recordsPerKey;
    }

    public long records() {
        return (long) keys * recordsPerKey;
    }

    public long key(long index) {
        return index % keys;
    }

    /** A deterministic, well-mixed value in [0, 1000). */
    public static long value(long index) {
        long h = index * 0x9E3779B97F4A7C15L;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 32;
        return Math.floorMod(h, 1000L);
    }
}
