package io.taishan.backend;

import org.apache.flink.streaming.api.functions.source.SourceFunction;

/**
 * A test's source with its own loop and checkpointed position: Flink's {@code SourceFunction} as
 * Flink 1.20 has it, so that one test source compiles against both lines.
 */
public abstract class TestSourceFunction<T> implements SourceFunction<T> {
    private static final long serialVersionUID = 1L;
}
