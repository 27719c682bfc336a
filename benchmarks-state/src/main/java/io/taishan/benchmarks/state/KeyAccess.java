package io.taishan.benchmarks.state;

/** The JMH parameter {@code access}: which loaded keys the operations touch. */
public enum KeyAccess {
    /** Every loaded key equally likely, drawn with replacement. */
    UNIFORM,
    /**
     * Zipf with exponent {@value BenchmarkKeys#ZIPF_EXPONENT} over the loaded keys: a few keys take
     * most operations, as in skewed streams; the ranks are spread over all key groups.
     */
    ZIPF
}
