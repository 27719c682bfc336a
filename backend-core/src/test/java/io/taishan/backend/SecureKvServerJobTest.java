package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvClientTls;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.protocol.ScanRange;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.testing.TestCertificates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.ExceptionUtils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Flink job on a MiniCluster whose kv-server wants mutual TLS and a token, configured through the
 * {@code taishan.kv.*} options only: its state goes over TLS into tables its token covers; with a
 * token for another prefix the job fails with PERMISSION_DENIED, and with an unknown one with
 * UNAUTHENTICATED; the token never shows in the backend's or Flink's printing of the configuration.
 */
class SecureKvServerJobTest {
    private static final String ADMIN = "admin-0123456789abcdef0123";
    private static final String JOBS = "jobs-0123456789abcdef01234";
    private static final String OTHERS = "others-0123456789abcdef012";
    private static final int KEYS = 10;
    private static final int RECORDS = 200;

    /** Last count per key, as the job saw it. */
    static final Map<Long, Long> COUNTS = new ConcurrentHashMap<>();

    @TempDir static Path dir;

    private static TestCertificates certs;
    private static EmbeddedKvServer server;
    private static Path jobsTokenFile;

    @BeforeAll
    static void start() throws Exception {
        certs = TestCertificates.create(dir.resolve("certs"));
        Path tokens =
                Files.writeString(
                        dir.resolve("tokens"),
                        ADMIN + " * ops\n" + JOBS + " secure_ jobs\n" + OTHERS + " others_ x\n");
        jobsTokenFile = Files.writeString(dir.resolve("jobs.token"), JOBS + "\n");
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .blockCacheBytes(16 << 20)
                                .writeBufferBytes(16 << 20)
                                .tlsCertFile(certs.server().certFile())
                                .tlsKeyFile(certs.server().keyFile())
                                .tlsClientCaFile(certs.caCert())
                                .authTokenFile(tokens)
                                .build());
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    /** The cluster configuration a user writes for a secured kv-server, without the token. */
    private static Configuration secured() {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, TaishanStateBackendFactory.class.getName());
        config.set(TaishanOptions.KV_ADDRESS, server.address());
        config.set(TaishanOptions.KV_TLS_ENABLED, true);
        config.set(TaishanOptions.KV_TLS_TRUST_CERT_FILE, certs.caCert().toString());
        config.set(TaishanOptions.KV_TLS_CERT_FILE, certs.client().certFile().toString());
        config.set(TaishanOptions.KV_TLS_KEY_FILE, certs.client().keyFile().toString());
        config.set(TaishanOptions.TABLE_PREFIX, "secure");
        config.set(TaishanOptions.KV_MAX_ATTEMPTS, 1);
        // Every write sent at once and no cache: every state access crosses the wire.
        config.set(TaishanOptions.WRITE_QUEUE_FLUSH_COUNT, 1);
        config.set(TaishanOptions.CACHE_TYPE, "none");
        config.set(RestOptions.BIND_PORT, "0");
        config.setString("restart-strategy.type", "none");
        return config;
    }

    private static JobResult run(Configuration config) throws Exception {
        try (MiniCluster cluster =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(config)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(2)
                                .build())) {
            cluster.start();
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(2);
            env.setMaxParallelism(8);
            env.fromSequence(0, RECORDS - 1)
                    .keyBy(v -> v % KEYS, Types.LONG)
                    .map(new Counting())
                    .uid("counting")
                    .addSink(new CountSink());
            JobGraph job = env.getStreamGraph().getJobGraph();
            cluster.submitJob(job).get();
            return cluster.requestJobResult(job.getJobID()).get();
        }
    }

    @Test
    void aJobRunsOverMutualTlsWithATokenFile() throws Exception {
        COUNTS.clear();
        Configuration config = secured();
        config.set(TaishanOptions.KV_TOKEN_FILE, jobsTokenFile.toString());
        JobResult result = run(config);
        assertThat(result.isSuccess())
                .as("%s", result.getSerializedThrowable().map(Throwable::toString).orElse(""))
                .isTrue();
        assertThat(COUNTS)
                .hasSize(KEYS)
                .allSatisfy((k, v) -> assertThat(v).isEqualTo(RECORDS / KEYS));

        // The state is on the server, in the job's table, which only a covering token sees.
        try (KvStore jobs = connect(JOBS);
                KvStore others = connect(OTHERS)) {
            List<TableInfo> tables = jobs.listTables();
            assertThat(tables)
                    .singleElement()
                    .satisfies(t -> assertThat(t.name()).startsWith("secure_"));
            assertThat(others.listTables()).isEmpty();
            String table = tables.get(0).name();
            long entries = 0;
            for (int shard = 0; shard < 8; shard++) {
                try (CloseableIterator<KvEntry> it =
                        jobs.scan(jobs.openShard(table, shard), ScanRange.all(), 0, true)) {
                    while (it.hasNext()) {
                        it.next();
                        entries++;
                    }
                }
            }
            // A finished job's last writes may still have been queued (no final checkpoint flushes
            // them), so some keys, not necessarily all.
            assertThat(entries).isBetween(1L, (long) KEYS);
        }
    }

    @Test
    void aTokenForAnotherPrefixFailsTheJobWithPermissionDenied() throws Exception {
        Configuration config = secured();
        config.set(TaishanOptions.KV_TOKEN, OTHERS);
        JobResult result = run(config);
        assertThat(result.isSuccess()).isFalse();
        Throwable failure =
                result.getSerializedThrowable()
                        .orElseThrow()
                        .deserializeError(getClass().getClassLoader());
        assertThat(ExceptionUtils.findThrowableWithMessage(failure, "PERMISSION_DENIED"))
                .isPresent();
        assertThat(ExceptionUtils.stringifyException(failure)).doesNotContain(OTHERS);
    }

    @Test
    void anUnknownTokenFailsTheJobWithUnauthenticated() throws Exception {
        Configuration config = secured();
        config.set(TaishanOptions.KV_TOKEN, "not-a-token-the-server-knows");
        JobResult result = run(config);
        assertThat(result.isSuccess()).isFalse();
        Throwable failure =
                result.getSerializedThrowable()
                        .orElseThrow()
                        .deserializeError(getClass().getClassLoader());
        assertThat(ExceptionUtils.findThrowableWithMessage(failure, "UNAUTHENTICATED")).isPresent();
        assertThat(
                        ExceptionUtils.findThrowableWithMessage(
                                failure, "did not accept this TaskManager's credentials"))
                .isPresent();
        assertThat(ExceptionUtils.stringifyException(failure))
                .doesNotContain("Cannot reach")
                .doesNotContain("not-a-token-the-server-knows");
    }

    @Test
    void theTokenIsHiddenWherePrintedAndOptionsThatContradictAreRejected() {
        assertThat(GlobalConfiguration.isSensitive(TaishanOptions.KV_TOKEN.key())).isTrue();
        assertThat(GlobalConfiguration.isSensitive(TaishanOptions.KV_TOKEN_FILE.key())).isTrue();
        Configuration config = secured();
        config.set(TaishanOptions.KV_TOKEN, JOBS);
        TaishanStateBackend backend =
                new TaishanStateBackend().configure(config, getClass().getClassLoader());
        assertThat(config.toString()).doesNotContain(JOBS);
        assertThat(backend.toString()).doesNotContain(JOBS).contains("taishan.kv.token");
        assertThat(backend.clientConfig().hasToken()).isTrue();
        assertThat(backend.clientConfig().toString()).doesNotContain(JOBS);

        Configuration plain = new Configuration();
        plain.set(TaishanOptions.KV_TLS_TRUST_CERT_FILE, "/ca.pem");
        assertThat(
                        org.assertj.core.api.Assertions.catchThrowable(
                                () -> new TaishanStateBackend().configure(plain, null)))
                .hasMessageContaining(
                        "taishan.kv.tls.trust-cert-file is set but taishan.kv.tls.enabled is false");
        Configuration both = new Configuration();
        both.set(TaishanOptions.KV_TOKEN, JOBS);
        both.set(TaishanOptions.KV_TOKEN_FILE, "/t");
        assertThat(
                        org.assertj.core.api.Assertions.catchThrowable(
                                () -> new TaishanStateBackend().configure(both, null)))
                .hasMessageContaining("set taishan.kv.token or taishan.kv.token-file, not both");
    }

    private static KvStore connect(String token) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .tls(
                                KvClientTls.trusting(certs.caCert())
                                        .withClientCertificate(
                                                certs.client().certFile(),
                                                certs.client().keyFile()))
                        .token(token)
                        .build());
    }

    static final class Counting extends RichMapFunction<Long, long[]> {
        private transient ValueState<Long> count;

        @Override
        public void open(OpenContext openContext) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public long[] map(Long value) throws Exception {
            long n = count.value() == null ? 1 : count.value() + 1;
            count.update(n);
            return new long[] {value % KEYS, n};
        }
    }

    static final class CountSink extends TestSinkFunction<long[]> {
        @Override
        public void invoke(long[] value, Context context) {
            COUNTS.merge(value[0], value[1], Math::max);
        }
    }
}
