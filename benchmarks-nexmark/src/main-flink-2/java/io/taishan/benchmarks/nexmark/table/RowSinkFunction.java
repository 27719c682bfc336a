package io.taishan.benchmarks.nexmark.table;

import org.apache.flink.table.connector.sink.DynamicTableSink.SinkRuntimeProvider;
import org.apache.flink.table.connector.sink.legacy.SinkFunctionProvider;
import org.apache.flink.table.data.RowData;

/**
 * A rich sink function of table rows and its table sink provider, on Flink 2: the legacy {@code
 * SinkFunction} API, kept for its accumulators (Sink V2's writer context has none), moved to the
 * {@code legacy} packages.
 */
abstract class RowSinkFunction
        extends org.apache.flink.streaming.api.functions.sink.legacy.RichSinkFunction<RowData> {
    private static final long serialVersionUID = 1L;

    static SinkRuntimeProvider provider(RowSinkFunction sink) {
        return SinkFunctionProvider.of(sink);
    }
}
