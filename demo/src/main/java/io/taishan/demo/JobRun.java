package io.taishan.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LongSummaryStatistics;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.CheckpointStatsStatus;
import org.apache.flink.runtime.checkpoint.RestoredCheckpointStats;
import org.apache.flink.runtime.checkpoint.SubtaskStateStats;
import org.apache.flink.runtime.checkpoint.TaskStateStats;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecution;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.executiongraph.ErrorInfo;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.jobgraph.JobVertexID;
import org.apache.flink.runtime.minicluster.MiniCluster;

/**
 * One submitted run of {@link DemoJob} on the MiniCluster, and the ways the demo ends it. Every
 * wait is bounded: a stuck step fails the demo with a message instead of hanging it.
 */
final class JobRun {
    static final Duration STEP_TIMEOUT = Duration.ofSeconds(90);
    private static final long POLL_MILLIS = 20;

    private final MiniCluster cluster;
    private final JobID id;
    private final String name;
    @Nullable private final String restorePath;
    private final Path checkpointDir;
    private final JobVertexID statefulVertexId;
    private final long submittedNanos = System.nanoTime();
    private final Set<Long> toldCheckpoints = new HashSet<>();

    private JobRun(
            MiniCluster cluster,
            JobID id,
            String name,
            @Nullable String restorePath,
            Path checkpointDir,
            JobVertexID statefulVertexId) {
        this.cluster = cluster;
        this.statefulVertexId = statefulVertexId;
        this.id = id;
        this.name = name;
        this.restorePath = restorePath;
        this.checkpointDir = checkpointDir;
    }

    static JobRun submit(
            MiniCluster cluster,
            JobGraph graph,
            String name,
            @Nullable String restorePath,
            Path checkpointDir)
            throws Exception {
        JobVertexID stateful = null;
        for (JobVertex vertex : graph.getVertices()) {
            if (vertex.getName().contains(DemoJob.STATS_OPERATOR)) {
                stateful = vertex.getID();
            }
        }
        if (stateful == null) {
            throw new IllegalArgumentException("no " + DemoJob.STATS_OPERATOR + " in " + graph);
        }
        cluster.submitJob(graph).get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        return new JobRun(cluster, graph.getJobID(), name, restorePath, checkpointDir, stateful);
    }

    JobID id() {
        return id;
    }

    String name() {
        return name;
    }

    double secondsSinceSubmit() {
        return (System.nanoTime() - submittedNanos) / 1e9;
    }

    /** Waits for that many completed checkpoints, telling each as it completes. */
    void awaitCheckpoints(int count) throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        while (true) {
            JobStatus status = cluster.getJobStatus(id).get();
            if (status.isGloballyTerminalState()) {
                throw new DemoFailure(
                        name
                                + " ended ("
                                + status
                                + ") before "
                                + count
                                + " checkpoints"
                                + cause());
            }
            CheckpointStatsSnapshot stats = checkpointStats();
            tellNewCheckpoints(stats);
            if (stats != null && stats.getCounts().getNumberOfCompletedCheckpoints() >= count) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new DemoFailure(
                        name
                                + ": fewer than "
                                + count
                                + " checkpoints within "
                                + STEP_TIMEOUT.toSeconds()
                                + " s; last failure: "
                                + lastFailure(stats));
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /** Waits until every subtask of the keyed operator has restored its state and runs. */
    void awaitStatefulSubtasksRunning() throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        while (true) {
            JobStatus status = cluster.getJobStatus(id).get();
            if (status.isGloballyTerminalState()) {
                throw new DemoFailure(name + " ended (" + status + ") while starting" + cause());
            }
            AccessExecutionJobVertex vertex = statefulVertex();
            if (vertex != null
                    && Arrays.stream(vertex.getTaskVertices())
                            .allMatch(
                                    subtask ->
                                            subtask.getExecutionState() == ExecutionState.RUNNING
                                                    || subtask.getExecutionState()
                                                            == ExecutionState.FINISHED)) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new DemoFailure(
                        name
                                + ": "
                                + DemoJob.STATS_OPERATOR
                                + " not running within "
                                + STEP_TIMEOUT.toSeconds()
                                + " s");
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /** Cancels the run and returns the checkpoint it retained: the latest complete one. */
    String cancelKeepingCheckpoint() throws Exception {
        cluster.cancelJob(id).get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        awaitStatus(JobStatus.CANCELED);
        tellNewCheckpoints(checkpointStats());
        Path jobDir = checkpointDir.resolve(id.toString());
        Optional<Path> latest;
        try (Stream<Path> children = Files.list(jobDir)) {
            latest =
                    children.filter(dir -> dir.getFileName().toString().startsWith("chk-"))
                            .filter(dir -> Files.exists(dir.resolve("_metadata")))
                            .max(Comparator.comparingLong(JobRun::checkpointNumber));
        }
        return latest.orElseThrow(
                        () -> new DemoFailure(name + " retained no checkpoint in " + jobDir))
                .toUri()
                .toString();
    }

    /** Waits until the run has read all its input and ended. */
    void awaitFinished() throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        JobStatus status;
        while ((status = cluster.getJobStatus(id).get()) != JobStatus.FINISHED) {
            if (status.isGloballyTerminalState() || System.nanoTime() > deadline) {
                throw new DemoFailure(name + " is " + status + ", expected FINISHED" + cause());
            }
            tellNewCheckpoints(checkpointStats());
            Thread.sleep(POLL_MILLIS);
        }
        tellNewCheckpoints(
                cluster.getArchivedExecutionGraph(id).get().getCheckpointStatsSnapshot());
    }

    /**
     * The checkpoint Flink says this run restored, which must be the one it was given: a restore
     * that Flink skipped would look like a fresh start and the story would be wrong.
     */
    RestoredCheckpointStats verifiedRestore() throws Exception {
        CheckpointStatsSnapshot stats = checkpointStats();
        RestoredCheckpointStats restored =
                stats == null ? null : stats.getLatestRestoredCheckpoint();
        if (restorePath == null
                || restored == null
                || !samePath(restored.getExternalPath(), restorePath)) {
            throw new DemoFailure(
                    name
                            + " was to restore "
                            + restorePath
                            + " but restored "
                            + (restored == null ? "nothing" : restored.getExternalPath()));
        }
        return restored;
    }

    /**
     * From INITIALIZING to RUNNING of each subtask of the keyed operator: Flink's own measure of
     * state restore and operator set-up, in ms.
     */
    LongSummaryStatistics initializationMillis() throws Exception {
        LongSummaryStatistics millis = new LongSummaryStatistics();
        AccessExecutionJobVertex vertex = statefulVertex();
        if (vertex == null) {
            return millis;
        }
        for (AccessExecutionVertex subtask : vertex.getTaskVertices()) {
            AccessExecution attempt = subtask.getCurrentExecutionAttempt();
            long initializing = attempt.getStateTimestamp(ExecutionState.INITIALIZING);
            long running = attempt.getStateTimestamp(ExecutionState.RUNNING);
            if (initializing > 0 && running >= initializing) {
                millis.accept(running - initializing);
            }
        }
        return millis;
    }

    @Nullable
    private AccessExecutionJobVertex statefulVertex() throws Exception {
        return cluster.getExecutionGraph(id).get().getJobVertex(statefulVertexId);
    }

    private void tellNewCheckpoints(@Nullable CheckpointStatsSnapshot stats) {
        if (stats == null) {
            return;
        }
        stats.getHistory().getCheckpoints().stream()
                .filter(c -> c.getStatus() == CheckpointStatsStatus.COMPLETED)
                .sorted(Comparator.comparingLong(AbstractCheckpointStats::getCheckpointId))
                .filter(c -> toldCheckpoints.add(c.getCheckpointId()))
                .forEach(this::tellCheckpoint);
    }

    private void tellCheckpoint(AbstractCheckpointStats checkpoint) {
        long barrierDelay = 0;
        long sync = 0;
        long async = 0;
        TaskStateStats stateful = checkpoint.getTaskStateStats(statefulVertexId);
        if (stateful != null) {
            for (SubtaskStateStats subtask : stateful.getSubtaskStats()) {
                if (subtask != null) {
                    barrierDelay = Math.max(barrierDelay, subtask.getCheckpointStartDelay());
                    sync = Math.max(sync, subtask.getSyncCheckpointDuration());
                    async = Math.max(async, subtask.getAsyncCheckpointDuration());
                }
            }
        }
        Story.say(
                "  checkpoint %d completed in %,d ms; at %s: barrier arrived after %,d ms, marker"
                        + " cut %,d ms, shard snapshots + manifest %,d ms; %s of Flink state",
                checkpoint.getCheckpointId(),
                checkpoint.getEndToEndDuration(),
                DemoJob.STATS_OPERATOR,
                barrierDelay,
                sync,
                async,
                Story.bytes(checkpoint.getStateSize()));
    }

    @Nullable
    private CheckpointStatsSnapshot checkpointStats() throws Exception {
        return cluster.getExecutionGraph(id).get().getCheckpointStatsSnapshot();
    }

    private void awaitStatus(JobStatus expected) throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        JobStatus status;
        while ((status = cluster.getJobStatus(id).get()) != expected) {
            if (status.isGloballyTerminalState() || System.nanoTime() > deadline) {
                throw new DemoFailure(name + " is " + status + ", expected " + expected + cause());
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    private String cause() throws Exception {
        ErrorInfo failure = cluster.getArchivedExecutionGraph(id).get().getFailureInfo();
        return failure == null ? "" : "; cause:\n" + failure.getExceptionAsString();
    }

    private static String lastFailure(@Nullable CheckpointStatsSnapshot stats) {
        if (stats == null || stats.getHistory().getLatestFailedCheckpoint() == null) {
            return "none";
        }
        return String.valueOf(stats.getHistory().getLatestFailedCheckpoint().getFailureMessage());
    }

    private static long checkpointNumber(Path dir) {
        return Long.parseLong(dir.getFileName().toString().substring("chk-".length()));
    }

    private static boolean samePath(String a, String b) {
        return normalize(a).equals(normalize(b));
    }

    private static String normalize(String path) {
        String withoutScheme = path.startsWith("file:") ? path.substring("file:".length()) : path;
        String trimmed = withoutScheme.replaceAll("^/+", "/").replaceAll("/+$", "");
        try {
            return Path.of(trimmed).toRealPath().toString();
        } catch (IOException e) {
            return trimmed;
        }
    }
}
