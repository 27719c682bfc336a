package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.CheckpointType;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real JobManager path: a DataStream job on a MiniCluster, the backend chosen by {@code
 * state.backend.type}, an explicit checkpoint (the handle goes through {@code _metadata}), then a
 * native savepoint restored at parallelism 2 (clone into the new job's table) and a canonical
 * savepoint restored at parallelism 1. The per-key state must continue exactly.
 */
class MiniClusterJobTest {
    static final int KEYS = 10;
    static final int BATCH = 500;

    /** Records the source may emit; raised by the test. */
    static final AtomicLong LIMIT = new AtomicLong();

    /** Latest (count, list size, map size) seen per key. */
    static final Map<Long, long[]> SEEN = new ConcurrentHashMap<>();

    /** The first count that did not follow its predecessor: lost or repeated state. */
    static final java.util.concurrent.atomic.AtomicReference<String> ANOMALY =
            new java.util.concurrent.atomic.AtomicReference<>();

    private static EmbeddedKvServer server;
    private static MiniCluster cluster;

    private static final Duration EMIT_TIMEOUT = Duration.ofMinutes(3);

    @TempDir static Path dirs;

    @BeforeAll
    static void start() throws Exception {
        resetRecords();
        server = EmbeddedKvServer.start();
        cluster = startCluster(server.address(), dirs);
    }

    /** Forgets what an earlier test class's jobs emitted and saw. */
    static void resetRecords() {
        LIMIT.set(0);
        SEEN.clear();
        ANOMALY.set(null);
    }

    /** A MiniCluster of one TaskManager with 4 slots, on Taishan, checkpointing under dirs. */
    static MiniCluster startCluster(String kvAddress, Path dirs) throws Exception {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, TaishanStateBackendFactory.class.getName());
        config.set(TaishanOptions.KV_ADDRESS, kvAddress);
        // Any free port: another cluster on this machine may hold Flink's default 8081.
        config.set(RestOptions.BIND_PORT, "0");
        config.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        config.set(
                CheckpointingOptions.CHECKPOINTS_DIRECTORY,
                dirs.resolve("checkpoints").toUri().toString());
        MiniCluster started =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(config)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(4)
                                .build());
        started.start();
        return started;
    }

    @AfterAll
    static void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void stateSurvivesCheckpointsNativeAndCanonicalSavepointsAndRescale() throws Exception {
        JobID first = submit(1, null);
        emitUpTo(BATCH);
        cluster.triggerCheckpoint(first, CheckpointType.FULL).get();
        String nativeSavepoint =
                cluster.triggerSavepoint(
                                first, savepointDir(dirs), true, SavepointFormatType.NATIVE)
                        .get();

        JobID second = submit(2, nativeSavepoint);
        emitUpTo(2 * BATCH);
        String canonicalSavepoint =
                cluster.triggerSavepoint(
                                second, savepointDir(dirs), true, SavepointFormatType.CANONICAL)
                        .get();

        JobID third = submit(1, canonicalSavepoint);
        emitUpTo(3 * BATCH);
        cluster.cancelJob(third).get();

        assertThat(SEEN).hasSize(KEYS);
        for (long[] seen : SEEN.values()) {
            long perKey = 3 * BATCH / KEYS;
            assertThat(seen).containsExactly(perKey, perKey, Math.min(perKey, 7));
        }
    }

    static String savepointDir(Path dirs) {
        return dirs.resolve("savepoints").toUri().toString();
    }

    /** Raises the limit and waits until every key has seen every record. */
    static void emitUpTo(long records) throws Exception {
        LIMIT.set(records);
        long perKey = records / KEYS;
        // Bounded, and failing at once on lost or repeated state: a job that lost a count would
        // otherwise keep the test waiting for a count it never reaches.
        long deadline = System.nanoTime() + EMIT_TIMEOUT.toNanos();
        while (!(SEEN.size() == KEYS && SEEN.values().stream().allMatch(s -> s[0] == perKey))) {
            assertThat(ANOMALY.get()).as("lost or repeated state").isNull();
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        "after "
                                + EMIT_TIMEOUT
                                + " not every key has seen "
                                + perKey
                                + " records: "
                                + SEEN.size()
                                + " keys, counts "
                                + SEEN.values().stream().map(s -> s[0]).sorted().toList());
            }
            Thread.sleep(20);
        }
        assertThat(ANOMALY.get()).as("lost or repeated state").isNull();
    }

    private static JobID submit(int parallelism, String savepoint) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setMaxParallelism(16);
        env.addSource(new LimitedSource())
                .setParallelism(1)
                .uid("source")
                .keyBy(r -> r.f0, Types.LONG)
                .process(new CountingFunction())
                .setParallelism(parallelism)
                .uid("counter")
                .addSink(new SeenSink())
                .setParallelism(1);
        return submit(cluster, env, savepoint);
    }

    /** Submits the job {@code env} describes, restored from {@code savepoint} if not null. */
    static JobID submit(MiniCluster cluster, StreamExecutionEnvironment env, String savepoint)
            throws Exception {
        JobGraph job = env.getStreamGraph().getJobGraph();
        if (savepoint != null) {
            job.setSavepointRestoreSettings(SavepointRestoreSettings.forPath(savepoint));
        }
        cluster.submitJob(job).get();
        return job.getJobID();
    }

    /** Emits (key, sequence) up to {@link #LIMIT}, its position in operator state. */
    static final class LimitedSource extends TestSourceFunction<Tuple2<Long, Long>>
            implements CheckpointedFunction {
        private volatile boolean running = true;
        private long next;
        private transient ListState<Long> position;

        @Override
        public void run(SourceContext<Tuple2<Long, Long>> ctx) throws Exception {
            while (running) {
                if (next < LIMIT.get()) {
                    synchronized (ctx.getCheckpointLock()) {
                        ctx.collect(Tuple2.of(next % KEYS, next));
                        next++;
                    }
                } else {
                    Thread.sleep(5);
                }
            }
        }

        @Override
        public void cancel() {
            running = false;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            position.update(List.of(next));
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            position =
                    context.getOperatorStateStore()
                            .getListState(new ListStateDescriptor<>("position", Types.LONG));
            for (Long p : position.get()) {
                next = p;
            }
        }
    }

    /** Value, list and map state per key, and a (far) processing-time timer per key. */
    static final class CountingFunction
            extends KeyedProcessFunction<Long, Tuple2<Long, Long>, long[]> {
        private transient ValueState<Long> count;
        private transient ListState<Long> sequence;
        private transient MapState<Long, Long> lastSeven;

        @Override
        public void open(OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            sequence =
                    getRuntimeContext()
                            .getListState(new ListStateDescriptor<>("sequence", Types.LONG));
            lastSeven =
                    getRuntimeContext()
                            .getMapState(new MapStateDescriptor<>("last", Types.LONG, Types.LONG));
        }

        @Override
        public void processElement(Tuple2<Long, Long> record, Context ctx, Collector<long[]> out)
                throws Exception {
            long n = count.value() == null ? 1 : count.value() + 1;
            count.update(n);
            sequence.add(record.f1);
            lastSeven.put(n % 7, record.f1);
            ctx.timerService()
                    .registerProcessingTimeTimer(
                            ctx.timerService().currentProcessingTime() + 86_400_000L);
            long listSize = 0;
            for (Long ignored : sequence.get()) {
                listSize++;
            }
            long mapSize = 0;
            for (Long ignored : lastSeven.keys()) {
                mapSize++;
            }
            out.collect(new long[] {record.f0, n, listSize, mapSize});
        }
    }

    static final class SeenSink extends TestSinkFunction<long[]> {
        @Override
        public void invoke(long[] value, Context context) {
            SEEN.merge(
                    value[0],
                    new long[] {value[1], value[2], value[3]},
                    (old, now) -> {
                        if (now[0] != old[0] + 1) {
                            ANOMALY.compareAndSet(
                                    null, "key " + value[0] + ": " + old[0] + " then " + now[0]);
                        }
                        return now;
                    });
        }
    }
}
