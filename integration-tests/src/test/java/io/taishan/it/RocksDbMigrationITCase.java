package io.taishan.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.FlinkCli;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.ReferenceRun;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.it.job.EventSchedule;
import io.taishan.it.job.KeyFinalState;
import io.taishan.it.job.OpenedSubtask;
import io.taishan.it.job.SourceGate;
import io.taishan.it.job.StatefulJobMain;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code docs/migration.md}, step by step, with the commands it tells a user to run: Flink's own
 * command line ({@link FlinkCli}) against the cluster's REST endpoint, the backend chosen by {@code
 * -D} options on {@code flink run}, the rest from the cluster's configuration. A job on Flink's
 * {@code EmbeddedRocksDBStateBackend} is stopped with a canonical savepoint; the same job started
 * from it on Taishan (a real kv-server, a child JVM: this JVM has Flink's {@code frocksdbjni})
 * checkpoints, takes a canonical savepoint and runs to its end with every key's final state exact;
 * the job started on RocksDB again from Taishan's savepoint runs to its end, exact again.
 *
 * <p>Each run's source is held at a position until its savepoint is taken, so what each savepoint
 * holds does not depend on the machine's speed.
 */
class RocksDbMigrationITCase {
    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    private static final EventSchedule SCHEDULE = Scenarios.SCHEDULE;

    /** Records of each split (of 3,200) the RocksDB run sees before its savepoint. */
    private static final long ROCKSDB_SAVEPOINT_AT = 800;

    /** Records of each split the Taishan run sees before its savepoint. */
    private static final long TAISHAN_SAVEPOINT_AT = 1600;

    private static final String ROCKSDB_KEYED_BACKEND =
            "org.apache.flink.contrib.streaming.state.RocksDBKeyedStateBackend";

    @Test
    @Timeout(300)
    void rocksDbToTaishanAndBackThroughCanonicalSavepoints(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        Path checkpoints = workDir.resolve("checkpoints");
        Path savepoints = workDir.resolve("savepoints");
        FlinkCli flink =
                new FlinkCli(
                        cluster,
                        clusterConfigYaml(checkpoints, savepoints, workDir.resolve("rocksdb")),
                        workDir.resolve("conf"));
        String jar = FlinkCli.emptyJobJar(workDir.resolve("job")).toString();

        try (TaishanBackendFixture kvServer =
                TaishanBackendFixture.start(workDir.resolve("taishan"))) {
            String kvAddress =
                    kvServer.configuration().toMap().get(TaishanBackendFixture.ADDRESS_KEY);
            Runs runs = new Runs(cluster, flink, jar, checkpoints, savepoints);
            Steps steps = new Steps();

            // Step 0: the job as it runs today, on RocksDB.
            RunningJob onRocksDb =
                    runs.start(2, null, ROCKSDB_SAVEPOINT_AT, "-Dstate.backend.type=rocksdb")
                            .awaitCompletedCheckpoints(2);
            steps.done("RocksDB run, p=2, 2 checkpoints");

            // Step 1: flink stop --type canonical --savepointPath <dir> <job id>
            Path fromRocksDbDir = savepoints.resolve("from-rocksdb");
            flink.exec(
                    "stop",
                    "--type",
                    "canonical",
                    "--savepointPath",
                    fromRocksDbDir.toUri().toString(),
                    onRocksDb.id().toString());
            onRocksDb.awaitStatus(JobStatus.FINISHED);
            String fromRocksDb = onlySavepointIn(fromRocksDbDir);
            steps.done("flink stop --type canonical (RocksDB)");

            // Step 2: flink run -s <savepoint> with the Taishan backend configured, at another
            // parallelism (a savepoint restores at any parallelism, not at another max).
            RunningJob onTaishan =
                    runs.start(
                            3,
                            fromRocksDb,
                            TAISHAN_SAVEPOINT_AT,
                            "-Dstate.backend.type=io.taishan.backend.TaishanStateBackendFactory",
                            "-Dtaishan.kv.address=" + kvAddress);
            long loaded =
                    onTaishan.awaitOpenedSubtasks().values().stream()
                            .mapToLong(OpenedSubtask::restoreWrites)
                            .sum();
            assertThat(loaded)
                    .as("entries the Taishan run loaded from the RocksDB savepoint")
                    .isPositive();
            steps.done(
                    "flink run -s on Taishan, p=3, until every subtask restored ("
                            + loaded
                            + " entries loaded)");
            onTaishan.awaitCompletedCheckpoints(2);
            steps.done("Taishan run: 2 checkpoints");

            // Step 3 (the way back): flink savepoint --type canonical <job id> <dir>
            Path fromTaishanDir = savepoints.resolve("from-taishan");
            flink.exec(
                    "savepoint",
                    "--type",
                    "canonical",
                    onTaishan.id().toString(),
                    fromTaishanDir.toUri().toString());
            String fromTaishan = onlySavepointIn(fromTaishanDir);
            steps.done("flink savepoint --type canonical (Taishan)");

            // The Taishan run goes on to its end: the state it took over was exact.
            onTaishan.releaseSource();
            FinalStates.assertSame(
                    onTaishan.awaitFinalStates(),
                    expected,
                    "RocksDB canonical savepoint -> Taishan, run to the end, vs. reference");
            steps.done("Taishan run to the end");

            // Step 4: flink run -s <Taishan's savepoint> on RocksDB again.
            RunningJob backOnRocksDb =
                    runs.start(2, fromTaishan, Long.MAX_VALUE, "-Dstate.backend.type=rocksdb");
            FinalStates.assertSame(
                    backOnRocksDb.awaitFinalStates(),
                    expected,
                    "Taishan canonical savepoint -> RocksDB, run to the end, vs. reference");
            steps.done("flink run -s on RocksDB, p=2, to the end");

            assertThat(onRocksDb.keyedBackends()).containsExactly(ROCKSDB_KEYED_BACKEND);
            assertThat(onTaishan.keyedBackends())
                    .containsExactly(TaishanBackendFixture.KEYED_BACKEND_CLASS);
            assertThat(backOnRocksDb.keyedBackends()).containsExactly(ROCKSDB_KEYED_BACKEND);
            assertThat(onRocksDb.finalStatesSoFar())
                    .as("final states of the stopped run")
                    .isEmpty();
        }
    }

    /** One line per step on stdout, with its time, for the report. */
    private static final class Steps {
        private long startedNanos = System.nanoTime();

        void done(String step) {
            long now = System.nanoTime();
            System.out.printf("[migration] %s: %d ms%n", step, (now - startedNanos) / 1_000_000);
            startedNanos = now;
        }
    }

    /** Starts runs of the job with {@code flink run}, and follows them. */
    private record Runs(
            MiniCluster cluster, FlinkCli flink, String jar, Path checkpoints, Path savepoints) {

        /**
         * {@code flink run -d [-s <savepoint>] -p <parallelism> <backend -D options> -c <main
         * class> <jar> <job arguments>}, its source held at {@code holdAt} records per split.
         */
        RunningJob start(
                int parallelism, @Nullable String savepoint, long holdAt, String... backendOptions)
                throws Exception {
            String runId = UUID.randomUUID().toString();
            SourceGate.holdAt(runId, holdAt);
            List<String> args = new ArrayList<>(List.of("-d"));
            if (savepoint != null) {
                args.addAll(List.of("-s", savepoint));
            }
            args.addAll(List.of("-p", Integer.toString(parallelism)));
            args.addAll(List.of(backendOptions));
            args.addAll(List.of("-c", StatefulJobMain.class.getName(), jar));
            args.addAll(
                    List.of(
                            "--run-id",
                            runId,
                            "--keys",
                            Integer.toString(SCHEDULE.keyCount()),
                            "--records-per-key",
                            Integer.toString(SCHEDULE.recordsPerKey()),
                            "--splits",
                            Integer.toString(SCHEDULE.splitCount())));
            flink.exec("run", args.toArray(String[]::new));
            JobID id = StatefulJobMain.submitted(runId);
            return RunningJob.submitted(
                    cluster, id, runId, parallelism, savepoint, checkpoints, savepoints);
        }
    }

    /**
     * What the user's {@code config.yaml} holds in migration.md: the same for every run, on either
     * backend.
     */
    private static Configuration clusterConfigYaml(
            Path checkpoints, Path savepoints, Path rocksDbLocalDir) {
        Configuration conf = new Configuration();
        conf.setString("pipeline.max-parallelism", "128");
        conf.setString("execution.checkpointing.interval", "200 ms");
        conf.setString("execution.checkpointing.dir", checkpoints.toUri().toString());
        conf.setString("execution.checkpointing.savepoint-dir", savepoints.toUri().toString());
        conf.setString("state.backend.rocksdb.localdir", rocksDbLocalDir.toString());
        // A failure must end the job, not restart it forever and look like a hang.
        conf.setString("restart-strategy.type", "none");
        return conf;
    }

    /** The path {@code flink stop} / {@code flink savepoint} printed: the one savepoint there. */
    private static String onlySavepointIn(Path dir) throws IOException {
        try (Stream<Path> children = Files.list(dir)) {
            List<Path> found =
                    children.filter(p -> p.getFileName().toString().startsWith("savepoint-"))
                            .filter(p -> Files.exists(p.resolve("_metadata")))
                            .toList();
            assertThat(found).as("savepoints in %s", dir).hasSize(1);
            return found.get(0).toUri().toString();
        }
    }
}
