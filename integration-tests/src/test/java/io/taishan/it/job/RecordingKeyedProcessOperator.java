package io.taishan.it.job;

import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;

/**
 * Flink's own {@code KeyedProcessOperator} that also reports which keyed state backend it got, so a
 * test proves the backend named in the configuration is the one that held the state.
 */
final class RecordingKeyedProcessOperator<IN, OUT> extends KeyedProcessOperator<Long, IN, OUT> {
    private static final long serialVersionUID = 1L;

    private final String runId;

    RecordingKeyedProcessOperator(String runId, KeyedProcessFunction<Long, IN, OUT> function) {
        super(function);
        this.runId = runId;
    }

    @Override
    public void open() throws Exception {
        super.open();
        JobRecorder.recordKeyedBackend(runId, getKeyedStateBackend().getClass().getName());
    }
}
