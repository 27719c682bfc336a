package io.taishan.backend;

import static io.taishan.backend.MiniClusterJobTest.BATCH;
import static io.taishan.backend.MiniClusterJobTest.KEYS;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.v2.ListState;
import org.apache.flink.api.common.state.v2.ListStateDescriptor;
import org.apache.flink.api.common.state.v2.MapState;
import org.apache.flink.api.common.state.v2.MapStateDescriptor;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Flink 2 job whose keyed operator runs with asynchronous state ({@code enableAsyncState()}, the
 * State V2 API) on Taishan, and switches to and from the synchronous operator of {@link
 * MiniClusterJobTest} across native savepoints, rescaling on the way. Flink serves asynchronous
 * operators of a backend without an asynchronous one through its adaptor, which sets the current
 * key with {@code setCurrentKeyAndKeyGroup}: a backend that only follows {@code setCurrentKey}
 * would read and write every key's state under the previous record's key.
 *
 * <p>Not a canonical savepoint: Flink 2 fails the tasks of an operator with asynchronous state that
 * is asked for one ("Not supported yet", FLINK-37301), whatever the backend.
 */
class AsyncStateJobTest {
    private static EmbeddedKvServer server;
    private static MiniCluster cluster;

    @TempDir static Path dirs;

    @BeforeAll
    static void start() throws Exception {
        MiniClusterJobTest.resetRecords();
        server = EmbeddedKvServer.start();
        cluster = MiniClusterJobTest.startCluster(server.address(), dirs);
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
    void asyncStateContinuesSyncStateAndBackAcrossNativeSavepointsAndRescale() throws Exception {
        JobID sync = submit(false, 1, null);
        MiniClusterJobTest.emitUpTo(BATCH);
        String first = savepoint(sync);

        JobID async = submit(true, 2, first);
        MiniClusterJobTest.emitUpTo(2 * BATCH);
        cluster.triggerCheckpoint(async).get();
        String second = savepoint(async);

        JobID syncAgain = submit(false, 1, second);
        MiniClusterJobTest.emitUpTo(3 * BATCH);
        cluster.cancelJob(syncAgain).get();

        assertThat(MiniClusterJobTest.SEEN).hasSize(KEYS);
        for (long[] seen : MiniClusterJobTest.SEEN.values()) {
            long perKey = 3 * BATCH / KEYS;
            assertThat(seen).containsExactly(perKey, perKey, Math.min(perKey, 7));
        }
    }

    private static String savepoint(JobID job) throws Exception {
        return cluster.triggerSavepoint(
                        job,
                        MiniClusterJobTest.savepointDir(dirs),
                        true,
                        SavepointFormatType.NATIVE)
                .get();
    }

    private static JobID submit(boolean async, int parallelism, String savepoint) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setMaxParallelism(16);
        // One record per key in flight and ten keys: a batch of Flink's default 1000 requests
        // never fills, so each round of a record's requests would wait out its 1 s timeout (and
        // Flink looks at the timeout only every 100 ms). Batches are the model test's subject.
        env.getConfig().setAsyncStateActiveBufferSize(1);
        var keyed =
                env.addSource(new MiniClusterJobTest.LimitedSource())
                        .setParallelism(1)
                        .uid("source")
                        .keyBy(r -> r.f0, Types.LONG);
        (async
                        ? keyed.enableAsyncState().process(new AsyncCountingFunction())
                        : keyed.process(new MiniClusterJobTest.CountingFunction()))
                .setParallelism(parallelism)
                .uid("counter")
                .addSink(new MiniClusterJobTest.SeenSink())
                .setParallelism(1);
        return MiniClusterJobTest.submit(cluster, env, savepoint);
    }

    /** {@link MiniClusterJobTest.CountingFunction} on the asynchronous State V2 API. */
    static final class AsyncCountingFunction
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
        public void processElement(Tuple2<Long, Long> record, Context ctx, Collector<long[]> out) {
            ctx.timerService()
                    .registerProcessingTimeTimer(
                            ctx.timerService().currentProcessingTime() + 86_400_000L);
            AtomicLong listSize = new AtomicLong();
            AtomicLong mapSize = new AtomicLong();
            count.asyncValue()
                    .thenCompose(
                            previous -> {
                                long n = previous == null ? 1 : previous + 1;
                                return count.asyncUpdate(n)
                                        .thenCompose(done -> sequence.asyncAdd(record.f1))
                                        .thenCompose(done -> lastSeven.asyncPut(n % 7, record.f1))
                                        .thenCompose(done -> sequence.asyncGet())
                                        .thenCompose(
                                                list ->
                                                        list.onNext(
                                                                e -> {
                                                                    listSize.incrementAndGet();
                                                                }))
                                        .thenCompose(done -> lastSeven.asyncKeys())
                                        .thenCompose(
                                                keys ->
                                                        keys.onNext(
                                                                k -> {
                                                                    mapSize.incrementAndGet();
                                                                }))
                                        .thenAccept(
                                                done ->
                                                        out.collect(
                                                                new long[] {
                                                                    record.f0,
                                                                    n,
                                                                    listSize.get(),
                                                                    mapSize.get()
                                                                }));
                            });
        }
    }
}
