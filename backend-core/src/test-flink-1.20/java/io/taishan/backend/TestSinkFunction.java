package io.taishan.backend;

import org.apache.flink.streaming.api.functions.sink.SinkFunction;

/**
 * A test's sink: Flink's {@code SinkFunction} as Flink 1.20 has it, so that one test sink compiles
 * against both lines.
 */
public abstract class TestSinkFunction<T> implements SinkFunction<T> {
    private static final long serialVersionUID = 1L;

    /** A sink that drops what it gets. */
    public static <T> TestSinkFunction<T> discarding() {
        return new TestSinkFunction<>() {
            private static final long serialVersionUID = 1L;
        };
    }
}
