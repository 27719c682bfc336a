package io.taishan.demo;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;

/** Hands each sensor's final report to the {@link DemoRecorder}. Stateless. */
final class TotalsSink implements Sink<SensorTotals> {
    private static final long serialVersionUID = 1L;

    private final String runName;

    TotalsSink(String runName) {
        this.runName = runName;
    }

    // The only abstract factory method in Flink 1.20; its WriterInitContext twin delegates here.
    @Override
    @SuppressWarnings("deprecation")
    public SinkWriter<SensorTotals> createWriter(InitContext context) {
        return new SinkWriter<>() {
            @Override
            public void write(SensorTotals totals, Context context) {
                DemoRecorder.reported(runName, totals);
            }

            @Override
            public void flush(boolean endOfInput) {}

            @Override
            public void close() {}
        };
    }
}
