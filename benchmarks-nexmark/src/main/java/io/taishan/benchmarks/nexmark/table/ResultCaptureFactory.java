package io.taishan.benchmarks.nexmark.table;

import java.util.List;
import java.util.Set;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.logical.LogicalType;

/**
 * {@code 'connector' = 'nexmark-capture'}: what replaces Nexmark's {@code blackhole} sinks. It
 * takes any changelog and keeps an order-free digest of the result it describes ({@link
 * ResultSink}), and with {@code 'dump-dir'} also writes the materialized rows there, one file per
 * subtask.
 */
public final class ResultCaptureFactory implements DynamicTableSinkFactory {
    public static final String IDENTIFIER = "nexmark-capture";

    static final ConfigOption<String> DUMP_DIR =
            ConfigOptions.key("dump-dir").stringType().noDefaultValue();

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(DUMP_DIR);
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        List<LogicalType> types = context.getPhysicalRowDataType().getLogicalType().getChildren();
        String dumpDir = helper.getOptions().getOptional(DUMP_DIR).orElse(null);
        return new CaptureSink(types, dumpDir);
    }

    private record CaptureSink(List<LogicalType> types, String dumpDir)
            implements DynamicTableSink {
        @Override
        public ChangelogMode getChangelogMode(ChangelogMode requested) {
            // Retractions with their old rows: the digest removes exactly what was added.
            return ChangelogMode.all();
        }

        @Override
        public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
            // A SinkFunction, for its accumulators: Sink V2's writer context has none.
            return RowSinkFunction.provider(new ResultSink(types, dumpDir));
        }

        @Override
        public DynamicTableSink copy() {
            return new CaptureSink(types, dumpDir);
        }

        @Override
        public String asSummaryString() {
            return "Nexmark result capture";
        }
    }

    /** For {@link ResultSink}'s field getters. */
    static RowData.FieldGetter[] getters(List<LogicalType> types) {
        RowData.FieldGetter[] getters = new RowData.FieldGetter[types.size()];
        for (int i = 0; i < getters.length; i++) {
            getters[i] = RowData.createFieldGetter(types.get(i), i);
        }
        return getters;
    }
}
