package io.taishan.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.backend.TaishanStateBackend;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.TableInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The extension as a user's job test uses it: next to Flink's {@code MiniClusterExtension}, a real
 * keyed job on the backend it hands out, its per-key results exact and its state in the embedded
 * server's tables.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class TaishanKvServerExtensionTest {
    private static final int KEYS = 10;
    private static final int RECORDS = 1_000;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setConfiguration(anyRestPort())
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    @RegisterExtension
    static final TaishanKvServerExtension KV_SERVER = new TaishanKvServerExtension();

    @Test
    void aJobOnTheResolvedBackendKeepsItsKeyedStateInTheServer(
            TaishanStateBackend backend, KvStore store) throws Exception {
        assertThat(backend.getKvAddress()).isEqualTo(KV_SERVER.address());
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setStateBackend(backend);

        JobID job = runCountingJob(env);

        assertThat(tablesOf(store, job)).isNotEmpty();
    }

    @Test
    void aJobConfiguredByTheFlinkConfigurationUsesTheServerToo() throws Exception {
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(KV_SERVER.flinkConfiguration());

        JobID job = runCountingJob(env);

        assertThat(tablesOf(KV_SERVER.kvStore(), job)).isNotEmpty();
    }

    /**
     * Counts records per key in value state and checks every key saw the counts 1..n in order (none
     * lost, none repeated); returns the job's id.
     */
    private static JobID runCountingJob(StreamExecutionEnvironment env) throws Exception {
        env.setParallelism(2);
        env.setMaxParallelism(8); // 8 shards per operator table: quick to create
        DataStream<Tuple2<Long, Long>> counts =
                env.fromSource(
                                new NumberSequenceSource(0, RECORDS - 1),
                                WatermarkStrategy.noWatermarks(),
                                "numbers")
                        .keyBy(n -> n % KEYS, Types.LONG)
                        .process(new CountPerKey());
        Map<Long, List<Long>> seen = new TreeMap<>();
        JobID job;
        try (CloseableIterator<Tuple2<Long, Long>> results = counts.collectAsync()) {
            JobClient client = env.executeAsync("counting job");
            job = client.getJobID();
            while (results.hasNext()) {
                Tuple2<Long, Long> r = results.next();
                seen.computeIfAbsent(r.f0, k -> new ArrayList<>()).add(r.f1);
            }
            client.getJobExecutionResult().get(2, TimeUnit.MINUTES);
        }
        assertThat(seen).hasSize(KEYS);
        List<Long> expected = new ArrayList<>();
        for (long i = 1; i <= RECORDS / KEYS; i++) {
            expected.add(i);
        }
        assertThat(seen.values()).allSatisfy(c -> assertThat(c).isEqualTo(expected));
        return job;
    }

    private static List<String> tablesOf(KvStore store, JobID job) {
        return store.listTables().stream()
                .map(TableInfo::name)
                .filter(n -> n.startsWith("flink_" + job + "_"))
                .toList();
    }

    private static Configuration anyRestPort() {
        Configuration c = new Configuration();
        // Any free port: another cluster on this machine may hold Flink's default 8081.
        c.set(RestOptions.BIND_PORT, "0");
        return c;
    }

    /** Emits (key, count so far) per record, the count in value state. */
    static final class CountPerKey extends KeyedProcessFunction<Long, Long, Tuple2<Long, Long>> {
        private transient ValueState<Long> count;

        @Override
        public void open(org.apache.flink.api.common.functions.OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Tuple2<Long, Long>> out)
                throws Exception {
            long n = count.value() == null ? 1 : count.value() + 1;
            count.update(n);
            out.collect(Tuple2.of(ctx.getCurrentKey(), n));
        }
    }
}
