package io.taishan.benchmarks.kv;

import java.util.Arrays;

/** The latencies of one measurement run, in nanoseconds, for exact percentiles. */
final class Samples {
    private final long[] nanos;
    private int count;
    private boolean sorted;

    Samples(int capacity) {
        this.nanos = new long[capacity];
    }

    void add(long elapsedNanos) {
        nanos[count++] = elapsedNanos;
        sorted = false;
    }

    int capacity() {
        return nanos.length;
    }

    /** Nearest-rank percentile: the smallest sample at or above {@code quantile} of them. */
    long percentile(double quantile) {
        if (count == 0) {
            throw new IllegalStateException("no samples");
        }
        if (!sorted) {
            Arrays.sort(nanos, 0, count);
            sorted = true;
        }
        int rank = (int) Math.ceil(quantile * count);
        return nanos[Math.max(0, Math.min(count, rank) - 1)];
    }
}
