package io.taishan.it.job;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;

/** Hands each key's final state to the {@link JobRecorder}. Stateless. */
final class FinalStateSink implements Sink<KeyFinalState> {
    private static final long serialVersionUID = 1L;

    private final String runId;

    FinalStateSink(String runId) {
        this.runId = runId;
    }

    // The only abstract factory method in Flink 1.20; its WriterInitContext twin delegates here.
    @Override
    @SuppressWarnings("deprecation")
    public SinkWriter<KeyFinalState> createWriter(InitContext context) {
        return new SinkWriter<>() {
            @Override
            public void write(KeyFinalState state, Context context) {
                JobRecorder.recordFinalState(runId, state);
            }

            @Override
            public void flush(boolean endOfInput) {}

            @Override
            public void close() {}
        };
    }
}
