package io.taishan.it.sql;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotNotFoundException;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.protocol.ScanRange;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.CheckpointType;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink SQL with idle-state retention on Taishan (issue 8): a group aggregation with {@code COUNT},
 * {@code SUM} and {@code COUNT(DISTINCT)}, a regular join, a deduplication, a join with two TTLs by
 * a {@code STATE_TTL} hint, and a processing-time {@code OVER} aggregation whose state only cleanup
 * timers remove, all under {@code table.exec.state.ttl}, over keys that keep arriving and keys that
 * go silent for many TTLs and come back ({@link IdleKeysSchedule}). Every query's output must equal
 * the same job's on {@code HashMapStateBackend}, and the model's where it is simple; and while the
 * silent keys are away, with nobody reading them, their entries must leave the kv-server by
 * themselves (counted in a checkpoint's shard snapshots, cloned into a scratch table so the running
 * job keeps its leases).
 */
class SqlIdleStateITCase {
    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    private static final Duration TTL = Duration.ofSeconds(3);
    private static final int MAX_PARALLELISM = 16;

    /** When the silent keys' state must be gone: quiet for a TTL and 4 s more by then. */
    private static final int CHECK_ROUND = IdleKeysSchedule.SILENT_FROM + 14;

    /** The last round a checkpoint may start in and still see only silent keys gone. */
    private static final int LAST_LOOK_ROUND =
            IdleKeysSchedule.SILENT_FROM + IdleKeysSchedule.SILENT_ROUNDS - 4;

    private static final List<String> UPDATING = List.of("groupBy");
    private static final List<String> APPEND_ONLY = List.of("join", "dedup", "hintJoin", "over");

    @Test
    @Timeout(300)
    void sqlOnTaishanMatchesHashMapAndSilentKeysLeaveTheStore(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        String reference = "hashmap-" + UUID.randomUUID();
        Configuration hashMap = new Configuration();
        hashMap.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        runToTheEnd(cluster, submit(cluster, reference, hashMap));

        Path serverConfig =
                Files.writeString(
                        workDir.resolve("server.properties"), "ttl.sweep-interval = 300ms\n");
        String taishan = "taishan-" + UUID.randomUUID();
        try (TaishanBackendFixture backend =
                        TaishanBackendFixture.start(
                                workDir.resolve("backend"), "--config", serverConfig.toString());
                KvStore kv =
                        KvStores.connect(KvClientConfig.forAddresses(address(backend)).build())) {
            Configuration config = backend.configuration();
            config.setString("taishan.ttl.clock-report-interval", "200ms");
            JobClient job = submit(cluster, taishan, config);

            awaitRound(IdleKeysSchedule.SILENT_FROM - 2);
            long early = checkpoint(cluster, job);
            assertThat(entriesContaining(kv, job.getJobID(), early, "sil-"))
                    .as("entries of the silent keys while they are active")
                    .isPositive();

            awaitRound(CHECK_ROUND);
            // Due by now; on a loaded machine the sweep and the clock reports run late, so look
            // again while the silent keys are still away (checkpoints taken until 2 s before
            // they return).
            long late;
            long silentLeft;
            int round;
            do {
                round = SqlResults.lastRound();
                late = checkpoint(cluster, job);
                silentLeft = entriesContaining(kv, job.getJobID(), late, "sil-");
            } while (silentLeft > 0 && SqlResults.lastRound() < LAST_LOOK_ROUND);
            assertThat(silentLeft)
                    .as(
                            "entries of keys silent for %s ms (checkpoint %d at round %d), TTL %s",
                            (round - IdleKeysSchedule.SILENT_FROM) * IdleKeysSchedule.ROUND_MILLIS,
                            late,
                            round,
                            TTL)
                    .isZero();
            assertThat(entriesContaining(kv, job.getJobID(), late, "act-"))
                    .as("entries of the active keys")
                    .isPositive();
            runToTheEnd(cluster, job);
        }

        for (String query : UPDATING) {
            assertThat(SqlResults.byKey(taishan, query))
                    .as(query)
                    .isNotEmpty()
                    .isEqualTo(SqlResults.byKey(reference, query));
        }
        for (String query : APPEND_ONLY) {
            assertThat(SqlResults.appended(taishan, query))
                    .as(query)
                    .isNotEmpty()
                    .isEqualTo(SqlResults.appended(reference, query));
        }
        assertGroupByMatchesTheModel(SqlResults.byKey(taishan, "groupBy"));
    }

    /** Active keys count every round; a returning key counts only the rounds since it came back. */
    private static void assertGroupByMatchesTheModel(Map<String, String> rows) {
        Map<String, String> expected = new HashMap<>();
        for (int s = 0; s < 2; s++) {
            boolean silent = s == 1;
            for (int k = 0; k < IdleKeysSchedule.KEYS; k++) {
                int from =
                        silent ? IdleKeysSchedule.SILENT_FROM + IdleKeysSchedule.SILENT_ROUNDS : 0;
                long count = 0;
                long sum = 0;
                Set<Integer> distinct = new HashSet<>();
                for (int round = from; round < IdleKeysSchedule.ROUNDS; round++) {
                    count++;
                    sum += round * 100L + k;
                    distinct.add(round);
                }
                String key = IdleKeysSchedule.key(silent, k);
                expected.put(key, Row.of(key, count, sum, (long) distinct.size()).toString());
            }
        }
        assertThat(rows).as("group by vs the model").isEqualTo(expected);
    }

    // ---- the job

    private static JobClient submit(MiniCluster cluster, String run, Configuration backend)
            throws Exception {
        SqlResults.reset();
        Configuration config = new Configuration();
        config.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.STREAMING);
        config.set(PipelineOptions.MAX_PARALLELISM, MAX_PARALLELISM);
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        // Checkpoints only when the test takes one.
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofHours(1));
        config.set(CheckpointingOptions.ENABLE_CHECKPOINTS_AFTER_TASKS_FINISH, false);
        config.addAll(backend);
        TestStreamEnvironment env =
                new TestStreamEnvironment(cluster, config, 2, List.of(), List.of());
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set("table.exec.state.ttl", TTL.toMillis() + " ms");

        @SuppressWarnings("deprecation")
        DataStream<Row> events =
                env.addSource(
                                new ScheduledRowsSource(),
                                Types.ROW_NAMED(
                                        new String[] {"src", "k", "v", "rnd"},
                                        Types.STRING,
                                        Types.STRING,
                                        Types.LONG,
                                        Types.INT))
                        .setParallelism(1);
        tEnv.createTemporaryView(
                "events",
                tEnv.fromDataStream(
                        events,
                        Schema.newBuilder().columnByExpression("pt", "PROCTIME()").build()));
        for (String stream : List.of("L", "R", "D", "HL", "HR")) {
            tEnv.createTemporaryView(
                    stream,
                    tEnv.sqlQuery("SELECT k, v, rnd, pt FROM events WHERE src = '" + stream + "'"));
        }

        updating(
                tEnv,
                run,
                "groupBy",
                "SELECT k, COUNT(*) AS c, SUM(v) AS s, COUNT(DISTINCT rnd) AS d"
                        + " FROM events WHERE src = 'E' GROUP BY k");
        appendOnly(
                tEnv,
                run,
                "join",
                "SELECT l.k, l.v AS lv, r.v AS rv FROM L l JOIN R r ON l.k = r.k");
        appendOnly(
                tEnv,
                run,
                "dedup",
                "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt)"
                        + " AS rn FROM D) WHERE rn = 1");
        appendOnly(
                tEnv,
                run,
                "hintJoin",
                "SELECT /*+ STATE_TTL('hl' = '3s', 'hr' = '60s') */ hl.k, hl.v AS lv, hr.v AS rv"
                        + " FROM HL hl JOIN HR hr ON hl.k = hr.k");
        appendOnly(
                tEnv,
                run,
                "over",
                "SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY pt ROWS BETWEEN 2 PRECEDING"
                        + " AND CURRENT ROW) AS s3 FROM events WHERE src = 'E'");
        JobClient job = env.executeAsync("sql-idle-state " + run);
        awaitAllTasksRunning(cluster, job.getJobID());
        SqlResults.release();
        return job;
    }

    private static void awaitAllTasksRunning(MiniCluster cluster, JobID job) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (true) {
            boolean allRunning = true;
            for (AccessExecutionVertex vertex :
                    cluster.getExecutionGraph(job).get().getAllExecutionVertices()) {
                allRunning &= vertex.getExecutionState() == ExecutionState.RUNNING;
            }
            if (allRunning) {
                return;
            }
            assertThat(System.nanoTime())
                    .as("every task running within 120 s")
                    .isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    @SuppressWarnings("deprecation")
    private static void updating(StreamTableEnvironment tEnv, String run, String name, String sql) {
        Table table = tEnv.sqlQuery(sql);
        tEnv.toChangelogStream(table).addSink(new SqlResults.ByKeySink(run, name)).name(name);
    }

    @SuppressWarnings("deprecation")
    private static void appendOnly(
            StreamTableEnvironment tEnv, String run, String name, String sql) {
        Table table = tEnv.sqlQuery(sql);
        tEnv.toChangelogStream(table).addSink(new SqlResults.AppendSink(run, name)).name(name);
    }

    private static void runToTheEnd(MiniCluster cluster, JobClient job) throws Exception {
        job.getJobExecutionResult().get(120, TimeUnit.SECONDS);
    }

    private static void awaitRound(int round) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (SqlResults.lastRound() < round) {
            assertThat(System.nanoTime()).as("round %d within 120 s", round).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    private static long checkpoint(MiniCluster cluster, JobClient job) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                return cluster.triggerCheckpoint(job.getJobID(), CheckpointType.FULL)
                        .get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    // ---- what the store holds

    /**
     * Entries whose key contains {@code token}, over every table of the job, as of the checkpoint:
     * each shard snapshot is cloned into a scratch table and scanned there, so the job's own leases
     * are untouched.
     */
    private static long entriesContaining(KvStore kv, JobID job, long checkpointId, String token) {
        byte[] needle = token.getBytes(StandardCharsets.UTF_8);
        long count = 0;
        for (TableInfo table : kv.listTables()) {
            if (!table.name().contains(job.toString())) {
                continue;
            }
            String scratch = "scratch_" + UUID.randomUUID().toString().replace('-', '_');
            kv.createTable(scratch, table.shardCount());
            try {
                for (int shard = 0; shard < table.shardCount(); shard++) {
                    ShardLease lease;
                    try {
                        lease = kv.cloneShard(table.name(), shard, checkpointId, scratch);
                    } catch (SnapshotNotFoundException e) {
                        // An operator that registered no state takes no snapshots.
                        break;
                    }
                    try (CloseableIterator<KvEntry> it = kv.scan(lease, ScanRange.all(), 0, true)) {
                        while (it.hasNext()) {
                            if (contains(it.next().key(), needle)) {
                                count++;
                            }
                        }
                    }
                }
            } finally {
                kv.dropTable(scratch);
            }
        }
        return count;
    }

    private static boolean contains(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    private static String address(TaishanBackendFixture backend) {
        return backend.configuration().getString(TaishanBackendFixture.ADDRESS_KEY, null);
    }
}
