package io.taishan.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.TaishanBackendFixture;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamUtils;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A partial restore never touches the shards someone else still owns. The job has two pipelined
 * regions that share one keyed operator's table but never exchange data: each source subtask emits
 * only the keys whose key groups its keyed subtask owns, and the keyed stream is reinterpreted
 * ({@link DataStreamUtils#reinterpretAsKeyedStream}), so there is no shuffle between them. With
 * region failover, subtask 0 fails once after a completed checkpoint: only its region restarts and
 * restores its shards from that checkpoint, while subtask 1 keeps writing to its shards of the same
 * table. Every key's final sum must be exact (a rolled-back shard of subtask 1 would lose the
 * records it never replays), subtask 1 must never have been restarted, and subtask 0 exactly once.
 */
class RegionFailoverITCase {
    private static final int PARALLELISM = 2;
    private static final int KEY_GROUPS = 128;
    private static final int KEYS = 64;
    private static final int RECORDS_PER_KEY = 300;

    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    /** Latest emitted (sum, count) per key, and the attempts seen per subtask. */
    static final Map<Long, long[]> LATEST = new ConcurrentHashMap<>();

    static final Map<Integer, Integer> MAX_ATTEMPT = new ConcurrentHashMap<>();
    static final AtomicBoolean FAILED = new AtomicBoolean();

    @Test
    @Timeout(240)
    void aFailedRegionRestoresItsShardsWhileTheOtherGoesOnWritingTheSameTable(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        LATEST.clear();
        MAX_ATTEMPT.clear();
        FAILED.set(false);
        try (TaishanBackendFixture backend =
                TaishanBackendFixture.start(workDir.resolve("backend"))) {
            Configuration config = new Configuration();
            config.set(PipelineOptions.MAX_PARALLELISM, KEY_GROUPS);
            config.set(JobManagerOptions.EXECUTION_FAILOVER_STRATEGY, "region");
            config.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
            config.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3);
            config.set(
                    RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY,
                    Duration.ofMillis(100));
            config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(200));
            config.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
            config.set(
                    CheckpointingOptions.CHECKPOINTS_DIRECTORY,
                    workDir.resolve("checkpoints").toUri().toString());
            config.addAll(backend.configuration());

            TestStreamEnvironment env =
                    new TestStreamEnvironment(cluster, config, PARALLELISM, List.of(), List.of());
            DataStream<Tuple2<Long, Long>> records =
                    env.addSource(new OwnKeysSource()).name("own-keys").uid("own-keys");
            DataStreamUtils.reinterpretAsKeyedStream(records, r -> r.f0, Types.LONG)
                    .process(new SumPerKey())
                    .uid("sum-per-key")
                    .addSink(new LatestPerKey())
                    .name("latest");
            env.execute("region failover");
        }

        Map<Long, long[]> expected = new HashMap<>();
        for (long key = 0; key < KEYS; key++) {
            long sum = 0;
            for (int seq = 0; seq < RECORDS_PER_KEY; seq++) {
                sum += value(key, seq);
            }
            expected.put(key, new long[] {sum, RECORDS_PER_KEY});
        }
        assertThat(FAILED).isTrue();
        assertThat(MAX_ATTEMPT).containsEntry(0, 1).containsEntry(1, 0);
        assertThat(LATEST).hasSize(KEYS);
        for (long key = 0; key < KEYS; key++) {
            assertThat(LATEST.get(key))
                    .as("sum and count of key %d", key)
                    .containsExactly(expected.get(key));
        }
    }

    static long value(long key, int seq) {
        return (key * 31 + seq * 7) % 1000;
    }

    /** The subtask that owns a key's key group at {@link #PARALLELISM}. */
    static int owner(long key) {
        return KeyGroupRangeAssignment.assignKeyToParallelOperator(key, KEY_GROUPS, PARALLELISM);
    }

    /**
     * Emits, for the keys its keyed subtask owns, {@link #RECORDS_PER_KEY} records each, round by
     * round, paced so that checkpoints complete in between; its position is checkpointed.
     */
    static final class OwnKeysSource extends RichParallelSourceFunction<Tuple2<Long, Long>>
            implements CheckpointedFunction {
        private volatile boolean running = true;
        private transient ListState<Integer> positionState;
        private int position;

        @Override
        public void run(SourceContext<Tuple2<Long, Long>> ctx) throws Exception {
            int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            while (running && position < RECORDS_PER_KEY) {
                synchronized (ctx.getCheckpointLock()) {
                    for (long key = 0; key < KEYS; key++) {
                        if (owner(key) == subtask) {
                            ctx.collect(Tuple2.of(key, (long) position));
                        }
                    }
                    position++;
                }
                Thread.sleep(10);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            positionState.update(List.of(position));
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            positionState =
                    context.getOperatorStateStore()
                            .getListState(new ListStateDescriptor<>("position", Types.INT));
            for (Integer p : positionState.get()) {
                position = p;
            }
        }
    }

    /**
     * Sums each key's values in keyed state; subtask 0 fails once, after its region has completed a
     * checkpoint past a third of its input.
     */
    static final class SumPerKey
            extends KeyedProcessFunction<Long, Tuple2<Long, Long>, Tuple2<Long, long[]>> {
        private transient ValueState<Long> sum;
        private transient ListState<Long> seen;

        @Override
        public void open(OpenContext openContext) {
            sum = getRuntimeContext().getState(new ValueStateDescriptor<>("sum", Types.LONG));
            seen = getRuntimeContext().getListState(new ListStateDescriptor<>("seen", Types.LONG));
            MAX_ATTEMPT.merge(
                    getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
                    getRuntimeContext().getTaskInfo().getAttemptNumber(),
                    Math::max);
        }

        @Override
        public void processElement(
                Tuple2<Long, Long> record, Context ctx, Collector<Tuple2<Long, long[]>> out)
                throws Exception {
            long key = record.f0;
            int seq = (int) (long) record.f1;
            long total = (sum.value() == null ? 0 : sum.value()) + value(key, seq);
            sum.update(total);
            seen.add((long) seq);
            long count = 0;
            for (Long ignored : seen.get()) {
                count++;
            }
            out.collect(Tuple2.of(key, new long[] {total, count}));
            if (seq == RECORDS_PER_KEY / 3
                    && getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0
                    && FAILED.compareAndSet(false, true)) {
                throw new IllegalStateException("the failure of region 0 this test injects");
            }
        }
    }

    static final class LatestPerKey implements SinkFunction<Tuple2<Long, long[]>> {
        @Override
        public void invoke(Tuple2<Long, long[]> value, Context context) {
            LATEST.put(value.f0, value.f1);
        }
    }
}
