package io.taishan.it;

import static io.taishan.it.Runs.Exit.NATIVE_STOP_WITH_SAVEPOINT;
import static io.taishan.it.Runs.Exit.RETAINED_CHECKPOINT;
import static io.taishan.it.Scenarios.SCHEDULE;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.ReferenceRun;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.it.job.EventSchedule;
import io.taishan.it.job.KeyFinalState;
import io.taishan.it.job.OpenedSubtask;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableInfo;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.CheckpointType;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Durable checkpoints ({@code taishan.checkpoint.durable} with {@code durable.enabled} on the
 * kv-server, a child JVM) on {@code file://} checkpoint storage, end to end through the JobManager:
 * a completed checkpoint outlives the node that held its snapshots; restores and rescales where the
 * nodes hold their snapshots download nothing; and Flink's {@code SharedStateRegistry} deletes the
 * copies no retained checkpoint references while keeping those that are.
 */
class DurableCheckpointITCase {
    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    /**
     * The node is killed with SIGKILL, its disk is gone, and an empty node starts under its name
     * and port; the job is restored from its retained checkpoint at another parallelism (2 → 3, so
     * a subtask restores key groups of both earlier subtasks' cuts): the node downloads the cuts,
     * and every key's final state equals an uninterrupted HashMap run's.
     */
    @Test
    @Timeout(300)
    void aCheckpointOutlivesTheNodeThatHeldItsSnapshots(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (TaishanBackendFixture backend =
                TaishanBackendFixture.startDurable(workDir.resolve("backend"))) {
            Runs runs = new Runs(new JobHarness(cluster, backend, SCHEDULE, workDir));
            RunningJob job = runs.start(2, null).awaitCompletedCheckpoints(2);
            Runs.Restore checkpoint = runs.end(job, RETAINED_CHECKPOINT);

            backend.loseServerAndStartAnEmptyOne();

            RunningJob last = runs.startToEnd(3, checkpoint);
            // A cut two subtasks need is downloaded once, for whichever asked first.
            assertThat(downloadedBytes(last)).as("bytes the empty node downloaded").isPositive();
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            runs.finished(last);
            FinalStates.assertSame(
                    actual, expected, "restored onto an empty node from a durable checkpoint");
        }
    }

    /**
     * 2 → 4 → 1 through retained durable checkpoints, then 1 → 2 through a native savepoint (its
     * copies in its own directory): every node holds its snapshots, so no restore downloads a byte.
     */
    @Test
    @Timeout(300)
    void rescalingWhileTheNodesHoldTheSnapshotsDownloadsNothing(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (TaishanBackendFixture backend =
                TaishanBackendFixture.startDurable(workDir.resolve("backend"))) {
            Runs runs = new Runs(new JobHarness(cluster, backend, SCHEDULE, workDir));
            RunningJob job = runs.start(2, null).awaitCompletedCheckpoints(2);
            Runs.Restore path = runs.end(job, RETAINED_CHECKPOINT);
            job = runs.start(4, path).awaitCompletedCheckpoints(1);
            assertNothingDownloaded(job, path);
            path = runs.end(job, RETAINED_CHECKPOINT);
            job = runs.start(1, path).awaitCompletedCheckpoints(1);
            assertNothingDownloaded(job, path);
            path = runs.end(job, NATIVE_STOP_WITH_SAVEPOINT);
            assertThat(Files.list(Path.of(java.net.URI.create(savepointUri(path)))).count())
                    .as("files in the native savepoint's directory: its copies too")
                    .isGreaterThan(2);

            RunningJob last = runs.startToEnd(2, path);
            assertNothingDownloaded(last, path);
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            runs.finished(last);

            runs.assertNoInterruptedRunReachedTheEnd();
            FinalStates.assertSame(actual, expected, "2→4→1→2 with durable checkpoints");
        }
    }

    /**
     * The node's snapshots are a bounded cache of the copies in checkpoint storage: while the job
     * runs each shard keeps at most its two newest uploaded snapshots and the one under way; once
     * the job is cancelled (its checkpoint retained) and nobody uploads any more, the local copies
     * age out ({@code durable.local-snapshot-max-age}, 3 s here) until no snapshot file is left on
     * the node, without anyone running gc; the retained checkpoint then restores exactly, by
     * download.
     */
    @Test
    @Timeout(240)
    void aCancelledJobLeavesNoSnapshotFilesOnTheNodeAndItsCheckpointStillRestores(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (TaishanBackendFixture backend =
                        TaishanBackendFixture.startDurable(
                                workDir.resolve("backend"),
                                "durable.local-snapshot-max-age = 3s\n");
                KvStore kv =
                        KvStores.connect(
                                KvClientConfig.forAddresses(
                                                backend.configuration()
                                                        .getString(
                                                                TaishanBackendFixture.ADDRESS_KEY,
                                                                null))
                                        .build())) {
            Runs runs = new Runs(new JobHarness(cluster, backend, SCHEDULE, workDir));
            RunningJob job = runs.start(2, null).awaitCompletedCheckpoints(6);
            String table = tableOf(kv, job);
            Map<Integer, Set<Long>> localIds = new TreeMap<>();
            for (SnapshotInfo s : kv.listSnapshots(table)) {
                if (s.local()) {
                    localIds.computeIfAbsent(s.shard(), k -> new TreeSet<>()).add(s.snapshotId());
                }
            }
            assertThat(localIds.values())
                    .as("local snapshot ids per shard after 6 checkpoints")
                    .isNotEmpty()
                    .allSatisfy(ids -> assertThat(ids).hasSizeLessThanOrEqualTo(3));
            Runs.Restore checkpoint = runs.end(job, RETAINED_CHECKPOINT);

            Path cuts = backend.dataDir().resolve("tables").resolve(table).resolve("cuts");
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (entries(cuts) > 0 && System.nanoTime() < deadline) {
                Thread.sleep(250);
            }
            assertThat(entries(cuts)).as("snapshot files left in %s", cuts).isZero();
            assertThat(kv.listSnapshots(table)).noneMatch(SnapshotInfo::local);

            RunningJob last = runs.startToEnd(3, checkpoint);
            assertThat(downloadedBytes(last)).as("bytes downloaded to restore").isPositive();
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            runs.finished(last);
            FinalStates.assertSame(
                    actual, expected, "restored by download once the local copies aged out");
        }
    }

    private static String tableOf(KvStore kv, RunningJob job) {
        List<String> tables =
                kv.listTables().stream()
                        .map(TableInfo::name)
                        .filter(name -> name.startsWith("flink_" + job.id() + "_"))
                        .toList();
        assertThat(tables).as("tables of job %s", job.id()).hasSize(1);
        return tables.get(0);
    }

    /** What the job's subtasks downloaded from checkpoint storage when they opened. */
    private static long downloadedBytes(RunningJob job) throws Exception {
        long downloaded = 0;
        for (OpenedSubtask subtask : job.awaitOpenedSubtasks().values()) {
            downloaded += subtask.downloadedBytes();
        }
        return downloaded;
    }

    private static long entries(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return 0;
        }
        try (Stream<Path> list = Files.list(dir)) {
            return list.count();
        }
    }

    /** 32 keys, 60 records each, in 2 splits of 960 records each: rounds of 160 per split. */
    private static final EventSchedule ROUNDS = new EventSchedule(32, 60, 2);

    private static final int ROUND_RECORDS_PER_SPLIT = 160;

    private static final Duration QUIET = Duration.ofMillis(500);

    /**
     * One retained checkpoint, one checkpoint after each round of writes (each writes new files;
     * too few for a compaction): a full checkpoint (as after a NO_CLAIM restore) copies everything
     * anew, and the one after it reuses those copies and adds its new files'. After each, {@code
     * shared/} holds exactly the copies the retained checkpoint references: the JobManager deleted
     * those of the subsumed checkpoint, kept the reused ones, and nothing else is left.
     */
    @Test
    @Timeout(240)
    void theJobManagerDeletesCopiesOnlyOnceNoRetainedCheckpointReferencesThem(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        try (TaishanBackendFixture backend =
                TaishanBackendFixture.startDurable(workDir.resolve("backend"))) {
            JobHarness harness = new JobHarness(cluster, backend, ROUNDS, workDir);
            Configuration config = new Configuration();
            config.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 1);
            config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofHours(1));
            config.set(CheckpointingOptions.ENABLE_CHECKPOINTS_AFTER_TASKS_FINISH, false);
            RunningJob job =
                    harness.start(
                            2,
                            Scenarios.AS_FAST_AS_POSSIBLE,
                            null,
                            config,
                            ROUND_RECORDS_PER_SPLIT);
            Path shared =
                    workDir.resolve("checkpoints").resolve(job.id().toString()).resolve("shared");

            Set<String> first = round(job, shared, 1, CheckpointType.CONFIGURED);
            Set<String> full = round(job, shared, 2, CheckpointType.FULL);
            assertThat(full).as("copies of full checkpoint 2").doesNotContainAnyElementsOf(first);
            for (String copy : first) {
                assertThat(shared.resolve(copy)).as("copy of subsumed checkpoint 1").doesNotExist();
            }
            Set<String> third = round(job, shared, 3, CheckpointType.CONFIGURED);
            Set<String> reused = new TreeSet<>(third);
            reused.retainAll(full);
            assertThat(reused).as("copies of checkpoint 2 that checkpoint 3 reused").isNotEmpty();
            for (String copy : third) {
                assertThat(shared.resolve(copy)).as("copy checkpoint 3 references").exists();
            }
            for (String copy : full) {
                if (!third.contains(copy)) {
                    // Compacted away on the node since: no retained checkpoint has it.
                    assertThat(shared.resolve(copy))
                            .as("copy only checkpoint 2 had")
                            .doesNotExist();
                }
            }
            job.releaseSource().awaitFinalStates();
        }
    }

    /** Writes one round, checkpoints, and waits for {@code shared/} to hold its copies alone. */
    private static Set<String> round(RunningJob job, Path shared, int round, CheckpointType type)
            throws Exception {
        long position = (long) round * ROUND_RECORDS_PER_SPLIT;
        job.holdSourceAt(position)
                .awaitQuietAfter(ROUNDS.splitCount() * position, QUIET)
                .checkpoint(type);
        return awaitSharedEquals(shared, job, round);
    }

    /**
     * Waits until {@code shared/} holds exactly the data files checkpoint {@code checkpointId}
     * references (the deletes of subsumed ones are asynchronous); returns their names.
     */
    private static Set<String> awaitSharedEquals(Path shared, RunningJob job, long checkpointId)
            throws Exception {
        Path checkpointDir = shared.resolveSibling("chk-" + checkpointId);
        Set<String> referenced = referencedDataFiles(checkpointDir, shared);
        assertThat(referenced).as("data files of %s", checkpointDir).isNotEmpty();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            Set<String> present = listing(shared);
            if (present.equals(referenced)) {
                return referenced;
            }
            if (System.nanoTime() > deadline) {
                assertThat(present)
                        .as(
                                "shared/ of job %s once checkpoint %d is the one retained",
                                job.id(), checkpointId)
                        .isEqualTo(referenced);
            }
            Thread.sleep(100);
        }
    }

    private static Set<String> referencedDataFiles(Path checkpointDir, Path shared)
            throws IOException {
        CheckpointMetadata metadata;
        try (InputStream in = Files.newInputStream(checkpointDir.resolve("_metadata"))) {
            metadata =
                    Checkpoints.loadCheckpointMetadata(
                            new DataInputStream(in),
                            DurableCheckpointITCase.class.getClassLoader(),
                            checkpointDir.toUri().toString());
        }
        Set<String> files = new TreeSet<>();
        for (OperatorState operator : metadata.getOperatorStates()) {
            for (OperatorSubtaskState subtask : operator.getStates()) {
                for (KeyedStateHandle handle : subtask.getManagedKeyedState()) {
                    assertThat(handle).isInstanceOf(IncrementalRemoteKeyedStateHandle.class);
                    for (HandleAndLocalPath copy :
                            ((IncrementalRemoteKeyedStateHandle) handle).getSharedState()) {
                        Path file =
                                Path.of(
                                        ((FileStateHandle) copy.getHandle())
                                                .getFilePath()
                                                .toUri()
                                                .getPath());
                        assertThat(file.getParent()).isEqualTo(shared);
                        files.add(file.getFileName().toString());
                    }
                }
            }
        }
        return files;
    }

    private static Set<String> listing(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(f -> f.getFileName().toString())
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private static void assertNothingDownloaded(RunningJob job, Runs.Restore from)
            throws Exception {
        for (OpenedSubtask subtask : job.awaitOpenedSubtasks().values()) {
            assertThat(subtask.downloadedBytes())
                    .as("bytes downloaded for subtask %s restored from %s", subtask, from)
                    .isZero();
        }
    }

    private static String savepointUri(Runs.Restore savepoint) {
        String path = savepoint.path();
        return path.startsWith("file:") ? path : Path.of(path).toUri().toString();
    }
}
