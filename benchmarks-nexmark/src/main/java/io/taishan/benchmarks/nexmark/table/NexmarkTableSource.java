package io.taishan.benchmarks.nexmark.table;

import io.taishan.benchmarks.nexmark.generator.GeneratorConfig;
import io.taishan.benchmarks.nexmark.generator.NexmarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.ProviderContext;
import org.apache.flink.table.connector.source.DataStreamScanProvider;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;

/**
 * The Nexmark events as a bounded, parallel, deterministic stream: a {@link NumberSequenceSource}
 * (FLIP-27) of slot numbers, each mapped to the event at one index by {@link IndexedEvents}.
 *
 * <p>The sequence source cuts its range into one contiguous split per subtask. Were slot numbers
 * event indices, one subtask would make the first half of the run's event time and the other the
 * second, and every watermark (the minimum over the subtasks) would wait for the first half while
 * the windows of the second half filled up. So the range holds {@code stride * parallelism} slots
 * and slot {@code n} makes the event at {@code (n % stride) * parallelism + n / stride}: each split
 * walks the indices in steps of the parallelism, the subtasks advance through event time together,
 * and each emits its events in timestamp order (so, under Nexmark's 4 s watermark, none is late).
 * The mapping is a bijection whatever the splits turn out to be; slots past the last event make
 * nothing.
 */
final class NexmarkTableSource implements ScanTableSource {
    private final GeneratorConfig config;
    private final int parallelism;
    private final RowType rowType;
    private final boolean startGate;

    NexmarkTableSource(
            GeneratorConfig config, int parallelism, RowType rowType, boolean startGate) {
        this.config = config;
        this.parallelism = parallelism;
        this.rowType = rowType;
        this.startGate = startGate;
    }

    @Override
    public ChangelogMode getChangelogMode() {
        return ChangelogMode.insertOnly();
    }

    @Override
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
        return new DataStreamScanProvider() {
            @Override
            public DataStream<RowData> produceDataStream(
                    ProviderContext provider, StreamExecutionEnvironment env) {
                long stride = (config.maxEvents + parallelism - 1) / parallelism;
                SingleOutputStreamOperator<Long> slots =
                        env.fromSource(
                                        new NumberSequenceSource(0, stride * parallelism - 1),
                                        WatermarkStrategy.noWatermarks(),
                                        "nexmark slots")
                                .setParallelism(parallelism);
                provider.generateUid("slots").ifPresent(slots::uid);
                SingleOutputStreamOperator<RowData> events =
                        slots.flatMap(
                                        new IndexedEvents(
                                                new NexmarkGenerator(config),
                                                stride,
                                                parallelism,
                                                startGate))
                                .returns(InternalTypeInfo.of(rowType))
                                .setParallelism(parallelism)
                                .name("nexmark events");
                provider.generateUid("events").ifPresent(events::uid);
                return events;
            }

            @Override
            public boolean isBounded() {
                return true;
            }
        };
    }

    @Override
    public DynamicTableSource copy() {
        return new NexmarkTableSource(config, parallelism, rowType, startGate);
    }

    @Override
    public String asSummaryString() {
        return "Nexmark (" + config.maxEvents + " events)";
    }
}
