package io.taishan.benchmarks.kv;

import java.util.Arrays;

/** One figure measured in several runs: its median and its range. */
record Spread(double median, double min, double max, int runs) {

    static Spread of(double[] values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("no runs");
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
        return new Spread(median, sorted[0], sorted[n - 1], n);
    }

    /** The range as a share of the median: how far the runs disagree. */
    double relativeSpread() {
        return median == 0 ? 0 : (max - min) / median;
    }
}
