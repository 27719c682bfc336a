package io.taishan.benchmarks.nexmark.table;

import org.apache.flink.table.connector.sink.DynamicTableSink.SinkRuntimeProvider;
import org.apache.flink.table.connector.sink.SinkFunctionProvider;
import org.apache.flink.table.data.RowData;

/**
 * A rich sink function of table rows and its table sink provider, on Flink 1.20: the legacy {@code
 * SinkFunction} API, kept for its accumulators (Sink V2's writer context has none), lives in other
 * packages on Flink 2.
 */
@SuppressWarnings("deprecation")
abstract class RowSinkFunction
        extends org.apache.flink.streaming.api.functions.sink.RichSinkFunction<RowData> {
    private static final long serialVersionUID = 1L;

    static SinkRuntimeProvider provider(RowSinkFunction sink) {
        return SinkFunctionProvider.of(sink);
    }
}
