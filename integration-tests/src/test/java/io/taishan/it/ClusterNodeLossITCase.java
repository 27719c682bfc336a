package io.taishan.it;

import static io.taishan.it.Runs.Exit.RETAINED_CHECKPOINT;
import static io.taishan.it.Scenarios.AS_FAST_AS_POSSIBLE;
import static io.taishan.it.Scenarios.SCHEDULE;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.ReferenceRun;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.TaishanClusterFixture;
import io.taishan.it.job.KeyFinalState;
import io.taishan.it.job.OpenedSubtask;
import io.taishan.kv.protocol.ShardPlacement;
import java.io.DataInputStream;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.RestoredCheckpointStats;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Durable checkpoints on a cluster of three named kv-server nodes (child JVMs), changed the way
 * docs/operations.md, <i>Changing the cluster</i>, tells an operator to: a node lost (SIGKILL, its
 * data directory deleted) and replaced empty under its name, or removed from every other node's
 * {@code cluster.nodes}; a fourth node added. Every key's final state must equal an uninterrupted
 * HashMap run's, and only the nodes that lack a shard's snapshot may download it.
 *
 * <p>A kv-server reads {@code cluster.nodes} at start only, so every change restarts the nodes with
 * the new list, one at a time ({@link TaishanClusterFixture}), as the docs prescribe.
 */
class ClusterNodeLossITCase {
    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    /** Where every split of the source holds while the test takes a checkpoint. */
    private static final long CHECKPOINTED_POSITION = 800;

    /** Where it holds next: the node is lost while the job works towards it. */
    private static final long LOSS_POSITION = 1_600;

    /** Records past the checkpoint the job must have processed before the node is lost. */
    private static final long PAST_THE_CHECKPOINT = 100;

    private static final Duration QUIET = Duration.ofMillis(500);

    private static final String LOST = "kv2";

    /**
     * While the job runs (records flowing past its last checkpoint), kv2 is killed with SIGKILL,
     * its disk lost, and an empty node started under its name and port. Nobody restores the job by
     * hand: it fails over on its own to its last completed checkpoint, the empty kv2 downloads the
     * cuts of its shards (and only kv2 downloads anything), and the job ends exactly.
     */
    @Test
    @Timeout(180)
    void aLostNodeReplacedEmptyUnderItsNameTheJobFailsOverByItselfAndEndsExact(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (TaishanClusterFixture kv =
                TaishanClusterFixture.startDurable(workDir.resolve("kv"), 3)) {
            JobHarness harness = new JobHarness(cluster, kv, SCHEDULE, workDir);
            RunningJob job = runUntilLoss(harness);
            long checkpointed = latestCompletedCheckpoint(cluster, job);

            kv.loseNodeAndStartAnEmptyOne(LOST);
            job.releaseSource();

            Map<Long, KeyFinalState> actual = job.awaitFinalStates();
            assertThat(job.failovers()).as("failovers after losing %s", LOST).isPositive();
            RestoredCheckpointStats restored =
                    cluster.getArchivedExecutionGraph(job.id())
                            .get()
                            .getCheckpointStatsSnapshot()
                            .getLatestRestoredCheckpoint();
            assertThat(restored).as("the checkpoint the job failed over to").isNotNull();
            assertThat(restored.getCheckpointId())
                    .as("the checkpoint the job failed over to")
                    .isGreaterThanOrEqualTo(checkpointed);
            assertThat(kv.downloadedBytes(LOST))
                    .as("bytes the empty %s downloaded", LOST)
                    .isPositive();
            for (String node : List.of("kv1", "kv3")) {
                assertThat(kv.downloadedBytes(node))
                        .as("bytes %s, which holds its snapshots, downloaded", node)
                        .isZero();
            }
            FinalStates.assertSame(
                    actual, expected, "failed over after " + LOST + " was replaced empty");
        }
    }

    /**
     * As above, but the replacement comes up at a new address, and kv1 and kv3 are restarted with
     * the {@code cluster.nodes} that says so, while the job keeps failing over: it still names the
     * old address among its seeds, and must learn the new one from the cluster.
     */
    @Test
    @Timeout(180)
    void aLostNodeReplacedEmptyAtANewAddressTheJobFailsOverByItselfAndEndsExact(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (TaishanClusterFixture kv =
                TaishanClusterFixture.startDurable(workDir.resolve("kv"), 3)) {
            JobHarness harness = new JobHarness(cluster, kv, SCHEDULE, workDir);
            RunningJob job = runUntilLoss(harness);

            kv.loseNodeAndStartAnEmptyOneElsewhere(LOST);
            job.releaseSource();

            Map<Long, KeyFinalState> actual = job.awaitFinalStates();
            assertThat(job.failovers()).as("failovers after losing %s", LOST).isPositive();
            assertThat(kv.downloadedBytes(LOST))
                    .as("bytes the empty %s downloaded", LOST)
                    .isPositive();
            for (String node : List.of("kv1", "kv3")) {
                assertThat(kv.downloadedBytes(node))
                        .as("bytes %s, restarted on its data with the new list, downloaded", node)
                        .isZero();
            }
            FinalStates.assertSame(
                    actual,
                    expected,
                    "failed over after " + LOST + " was replaced empty at a new address");
        }
    }

    /**
     * The same loss, but kv2 is removed from the cluster instead (kv1 and kv3 restarted with a
     * {@code cluster.nodes} without it) and the job restored by hand from its retained checkpoint:
     * kv2's shards now belong to kv1 and kv3, which download their cuts; every other shard restores
     * from the snapshot its node holds.
     */
    @Test
    @Timeout(180)
    void aLostNodeRemovedFromTheClusterItsShardsAreDownloadedByTheirNewOwners(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (TaishanClusterFixture kv =
                TaishanClusterFixture.startDurable(workDir.resolve("kv"), 3)) {
            JobHarness harness = new JobHarness(cluster, kv, SCHEDULE, workDir);
            RunningJob job = runUntilLoss(harness);
            ShardPlacement before = ShardPlacement.of(kv.nodeNames());

            kv.loseNode(LOST);
            // The job fails over and over meanwhile: nothing serves kv2's shards.
            Runs.Restore checkpoint =
                    new Runs.Restore(job.cancelWithRetainedCheckpoint(), RETAINED_CHECKPOINT);
            kv.removeNode(LOST);
            ShardPlacement after = ShardPlacement.of(kv.nodeNames());

            Map<String, Integer> inherited = new TreeMap<>();
            int shards = JobHarness.MAX_PARALLELISM;
            for (int s = 0; s < shards; s++) {
                if (before.ownerNameOf(s, shards).equals(LOST)) {
                    inherited.merge(after.ownerNameOf(s, shards), 1, Integer::sum);
                } else {
                    assertThat(after.ownerNameOf(s, shards))
                            .as("owner of shard %d, which was not on %s", s, LOST)
                            .isEqualTo(before.ownerNameOf(s, shards));
                }
            }
            assertThat(inherited)
                    .as("%s's shards by new owner", LOST)
                    .containsOnlyKeys("kv1", "kv3");

            Runs runs = new Runs(harness);
            RunningJob last = runs.startToEnd(2, checkpoint);
            long downloadedBySubtasks = downloadedBySubtasks(last);
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            runs.finished(last);
            for (String node : inherited.keySet()) {
                assertThat(kv.downloadedBytes(node))
                        .as(
                                "bytes %s downloaded for the %d shards it took from %s",
                                node, inherited.get(node), LOST)
                        .isPositive();
            }
            assertThat(downloadedBySubtasks).as("bytes the restore downloaded").isPositive();
            FinalStates.assertSame(
                    actual, expected, "restored after " + LOST + " was removed from the cluster");
        }
    }

    /**
     * A fourth node joins a three-node cluster (started with the new list, then the others
     * restarted with it), and the job is restored from its retained checkpoint at another
     * parallelism (2 → 3): the shards that change owner are about a quarter, all of them now on
     * kv4, which alone downloads; the nodes that kept their shards download nothing.
     */
    @Test
    @Timeout(180)
    void aFourthNodeTakesAboutAQuarterOfTheShardsAndOnlyItDownloads(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (TaishanClusterFixture kv =
                TaishanClusterFixture.startDurable(workDir.resolve("kv"), 3)) {
            Runs runs = new Runs(new JobHarness(cluster, kv, SCHEDULE, workDir));
            RunningJob job = runs.start(2, null).awaitCompletedCheckpoints(2);
            Runs.Restore checkpoint = runs.end(job, RETAINED_CHECKPOINT);
            ShardPlacement three = ShardPlacement.of(kv.nodeNames());

            String added = kv.addNode();
            ShardPlacement four = ShardPlacement.of(kv.nodeNames());
            int shards = JobHarness.MAX_PARALLELISM;
            List<Integer> moved = new ArrayList<>();
            for (int s = 0; s < shards; s++) {
                if (!three.ownerNameOf(s, shards).equals(four.ownerNameOf(s, shards))) {
                    assertThat(four.ownerNameOf(s, shards))
                            .as("new owner of moved shard %d", s)
                            .isEqualTo(added);
                    moved.add(s);
                }
            }
            double movedFraction = (double) moved.size() / shards;
            assertThat(movedFraction)
                    .as("fraction of the %d shards that changed owner, 3 → 4 nodes", shards)
                    .isBetween(0.15, 0.35);

            RunningJob last = runs.startToEnd(3, checkpoint);
            long downloadedBySubtasks = downloadedBySubtasks(last);
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            runs.finished(last);

            long checkpointBytes = checkpointBytes(checkpoint.path());
            long downloaded = kv.downloadedBytes(added);
            System.out.printf(
                    "%d of %d shards (%.1f%%) moved to %s; it downloaded %d of the checkpoint's"
                            + " %d bytes (%.1f%%)%n",
                    moved.size(),
                    shards,
                    100 * movedFraction,
                    added,
                    downloaded,
                    checkpointBytes,
                    100.0 * downloaded / checkpointBytes);
            for (String node : List.of("kv1", "kv2", "kv3")) {
                assertThat(kv.downloadedBytes(node))
                        .as("bytes %s, which kept its shards, downloaded", node)
                        .isZero();
            }
            assertThat(downloaded).as("bytes %s downloaded", added).isPositive();
            assertThat(downloadedBySubtasks)
                    .as("bytes the restore downloaded, as the subtasks saw it")
                    .isEqualTo(downloaded);
            // A restore downloads whole cuts (one per old node and subtask), and with 128 blocks
            // of one shard each, every cut holds a shard that moved: kv4 downloads nearly the
            // whole checkpoint, but each cut once, although two new subtasks may need it.
            assertThat(downloaded)
                    .as("bytes %s downloaded, of the checkpoint's %d", added, checkpointBytes)
                    .isLessThanOrEqualTo(checkpointBytes);
            FinalStates.assertSame(actual, expected, "restored 2→3 after adding " + added);
        }
    }

    /**
     * Starts the job with a restart strategy, holds it at {@link #CHECKPOINTED_POSITION} for a
     * checkpoint, lets it go on towards {@link #LOSS_POSITION} and returns once it has processed
     * records past that checkpoint: what a node loss would take with it.
     */
    private static RunningJob runUntilLoss(JobHarness harness) throws Exception {
        int splits = SCHEDULE.splitCount();
        RunningJob job =
                harness.start(
                        2, AS_FAST_AS_POSSIBLE, null, restartOnFailure(), CHECKPOINTED_POSITION);
        job.awaitQuietAfter(splits * CHECKPOINTED_POSITION, QUIET).checkpoint();
        job.holdSourceAt(LOSS_POSITION);
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (job.recordsProcessed() < splits * (CHECKPOINTED_POSITION + PAST_THE_CHECKPOINT)) {
            assertThat(System.nanoTime())
                    .as("records processed past the checkpoint")
                    .isLessThan(deadline);
            Thread.sleep(5);
        }
        assertThat(job.finalStatesSoFar()).as("final states before the loss").isEmpty();
        return job;
    }

    /** Enough attempts for the failovers while the lost node is down or being replaced. */
    private static Configuration restartOnFailure() {
        Configuration config = new Configuration();
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        config.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 100);
        config.set(
                RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(300));
        return config;
    }

    private static long latestCompletedCheckpoint(MiniCluster cluster, RunningJob job)
            throws Exception {
        CheckpointStatsSnapshot stats =
                cluster.getExecutionGraph(job.id()).get().getCheckpointStatsSnapshot();
        return stats.getHistory().getLatestCompletedCheckpoint().getCheckpointId();
    }

    private static long downloadedBySubtasks(RunningJob job) throws Exception {
        long downloaded = 0;
        for (OpenedSubtask subtask : job.awaitOpenedSubtasks().values()) {
            downloaded += subtask.downloadedBytes();
        }
        return downloaded;
    }

    /** The keyed state's full size in a checkpoint: every file its handles reference. */
    private static long checkpointBytes(String checkpointUri) throws Exception {
        Path dir = Path.of(URI.create(checkpointUri));
        CheckpointMetadata metadata;
        try (InputStream in = Files.newInputStream(dir.resolve("_metadata"))) {
            metadata =
                    Checkpoints.loadCheckpointMetadata(
                            new DataInputStream(in),
                            ClusterNodeLossITCase.class.getClassLoader(),
                            checkpointUri);
        }
        long bytes = 0;
        for (OperatorState operator : metadata.getOperatorStates()) {
            for (OperatorSubtaskState subtask : operator.getStates()) {
                for (KeyedStateHandle handle : subtask.getManagedKeyedState()) {
                    bytes += handle.getStateSize();
                }
            }
        }
        assertThat(bytes).as("keyed state bytes of %s", checkpointUri).isPositive();
        return bytes;
    }
}
