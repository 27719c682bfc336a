package io.taishan.it.harness;

import io.taishan.it.job.JobRecorder;
import io.taishan.it.job.KeyFinalState;
import io.taishan.it.job.OpenedSubtask;
import io.taishan.it.job.SourceGate;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.core.execution.CheckpointType;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.RestoredCheckpointStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.ErrorInfo;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterJobClient;

/** One submitted {@code StatefulJob}, and the ways a test ends it. */
public final class RunningJob {
    /** How long any single step may take before the test fails instead of hanging. */
    static final Duration STEP_TIMEOUT = Duration.ofSeconds(120);

    private static final long POLL_MILLIS = 25;

    private final MiniCluster cluster;
    private final JobClient client;
    private final String runId;
    private final int parallelism;
    @Nullable private final String restorePath;
    private final Path checkpointDir;
    private final Path savepointDir;

    RunningJob(
            MiniCluster cluster,
            JobClient client,
            String runId,
            int parallelism,
            @Nullable String restorePath,
            Path checkpointDir,
            Path savepointDir) {
        this.cluster = cluster;
        this.client = client;
        this.runId = runId;
        this.parallelism = parallelism;
        this.restorePath = restorePath;
        this.checkpointDir = checkpointDir;
        this.savepointDir = savepointDir;
    }

    /**
     * A job submitted some other way (Flink's command line, {@link FlinkCli}), followed from here
     * as if this test had started it.
     */
    public static RunningJob submitted(
            MiniCluster cluster,
            JobID id,
            String runId,
            int parallelism,
            @Nullable String restorePath,
            Path checkpointDir,
            Path savepointDir) {
        JobClient client =
                new MiniClusterJobClient(
                        id,
                        cluster,
                        RunningJob.class.getClassLoader(),
                        MiniClusterJobClient.JobFinalizationBehavior.NOTHING);
        return new RunningJob(
                cluster, client, runId, parallelism, restorePath, checkpointDir, savepointDir);
    }

    public JobID id() {
        return client.getJobID();
    }

    public int parallelism() {
        return parallelism;
    }

    /** Waits until this job has completed that many checkpoints of its own. */
    public RunningJob awaitCompletedCheckpoints(int atLeast) throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        while (true) {
            JobStatus status = cluster.getJobStatus(id()).get();
            if (status.isGloballyTerminalState()) {
                throw new AssertionError(
                        describe()
                                + " ended ("
                                + status
                                + ") before "
                                + atLeast
                                + " checkpoints completed"
                                + failureCause());
            }
            CheckpointStatsSnapshot stats =
                    cluster.getExecutionGraph(id()).get().getCheckpointStatsSnapshot();
            if (stats != null && stats.getCounts().getNumberOfCompletedCheckpoints() >= atLeast) {
                verifyRestoredFrom(stats);
                return this;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        describe()
                                + ": fewer than "
                                + atLeast
                                + " checkpoints within "
                                + STEP_TIMEOUT
                                + ", last failure: "
                                + lastCheckpointFailure(stats));
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /**
     * Waits until every subtask of the stateful operator has opened, and returns what each saw then
     * (by subtask index).
     */
    public Map<Integer, OpenedSubtask> awaitOpenedSubtasks() throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        while (true) {
            Map<Integer, OpenedSubtask> opened = JobRecorder.openedSubtasks(runId);
            if (opened.size() >= parallelism) {
                return opened;
            }
            JobStatus status = cluster.getJobStatus(id()).get();
            if (status.isGloballyTerminalState() || System.nanoTime() > deadline) {
                throw new AssertionError(
                        describe()
                                + " is "
                                + status
                                + " with "
                                + opened.size()
                                + " of "
                                + parallelism
                                + " stateful subtasks opened"
                                + failureCause());
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /**
     * Takes a checkpoint now and waits until it has completed; tried again while some task is still
     * being deployed, which declines it.
     */
    public RunningJob checkpoint() throws Exception {
        return checkpoint(CheckpointType.CONFIGURED);
    }

    /**
     * As {@link #checkpoint()}, of the given type: {@code FULL} is the checkpoint Flink takes first
     * after a NO_CLAIM restore, which may share nothing with earlier ones.
     */
    public RunningJob checkpoint(CheckpointType type) throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        while (true) {
            try {
                cluster.triggerCheckpoint(id(), type)
                        .get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                return this;
            } catch (ExecutionException e) {
                if (System.nanoTime() > deadline
                        || !String.valueOf(e.getMessage())
                                .contains("Not all required tasks are currently running")) {
                    throw new AssertionError(
                            describe() + ": checkpoint failed" + failureCause(), e);
                }
                Thread.sleep(POLL_MILLIS);
            }
        }
    }

    /**
     * Lets every split of the source emit its records before {@code position}, then hold (see
     * {@link SourceGate}).
     */
    public RunningJob holdSourceAt(long position) {
        SourceGate.holdAt(runId, position);
        return this;
    }

    /**
     * Waits until the stateful operator has processed {@code records} records and then neither
     * processed a record nor fired a timer for {@code quiet}: then its state backend has nothing
     * left to send either, once its write queue's flush interval has passed too.
     */
    public RunningJob awaitQuietAfter(long records, Duration quiet) throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        while (JobRecorder.recordsProcessed(runId) < records
                || System.nanoTime() - JobRecorder.lastActivityNanos(runId) < quiet.toNanos()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(
                        describe()
                                + " did not become quiet for "
                                + quiet
                                + " after "
                                + records
                                + " records ("
                                + JobRecorder.recordsProcessed(runId)
                                + " processed)");
            }
            Thread.sleep(POLL_MILLIS);
        }
        return this;
    }

    public RunningJob releaseSource() {
        SourceGate.release(runId);
        return this;
    }

    /**
     * Records the stateful operator has processed so far, replays after a failover included: a
     * soak's throughput curve.
     */
    public long recordsProcessed() {
        return JobRecorder.recordsProcessed(runId);
    }

    /** How often the stateful operator was restarted after a failure within this job. */
    public long failovers() {
        return JobRecorder.highestAttempt(runId);
    }

    /** Lets the job run for a while (checked at least once), failing early if it ends. */
    public RunningJob keepRunning(Duration duration) throws Exception {
        long until = System.nanoTime() + duration.toNanos();
        while (true) {
            JobStatus status = cluster.getJobStatus(id()).get();
            if (status != JobStatus.RUNNING) {
                throw new AssertionError(
                        describe() + " is " + status + ", expected RUNNING" + failureCause());
            }
            if (System.nanoTime() >= until) {
                return this;
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /** Cancels the job and returns the path of the checkpoint it left behind. */
    public String cancelWithRetainedCheckpoint() throws Exception {
        cancel();
        Path jobDir = checkpointDir.resolve(id().toString());
        Optional<Path> latest;
        try (Stream<Path> children = Files.list(jobDir)) {
            latest =
                    children.filter(dir -> dir.getFileName().toString().startsWith("chk-"))
                            .filter(dir -> Files.exists(dir.resolve("_metadata")))
                            .max(Comparator.comparingLong(RunningJob::checkpointNumber));
        }
        return latest.orElseThrow(
                        () ->
                                new AssertionError(
                                        describe() + " retained no checkpoint in " + jobDir))
                .toUri()
                .toString();
    }

    /**
     * Cancels the job and returns the external path of its last completed checkpoint, as Flink's
     * checkpoint statistics report it: the way to find a retained checkpoint in a storage that is
     * not a local directory.
     */
    public String cancelWithRetainedCheckpointFromStats() throws Exception {
        cancel();
        CheckpointStatsSnapshot stats =
                cluster.getArchivedExecutionGraph(id()).get().getCheckpointStatsSnapshot();
        if (stats == null || stats.getHistory().getLatestCompletedCheckpoint() == null) {
            throw new AssertionError(describe() + " completed no checkpoint");
        }
        return stats.getHistory().getLatestCompletedCheckpoint().getExternalPath();
    }

    /** Takes a savepoint while the job keeps running, then cancels it. */
    public String savepointThenCancel(SavepointFormatType format) throws Exception {
        String path =
                client.triggerSavepoint(savepointDir.toUri().toString(), format)
                        .get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        cancel();
        return path;
    }

    /** Stops the job with a savepoint, without draining: no final watermark, no final state. */
    public String stopWithSavepoint(SavepointFormatType format) throws Exception {
        String path =
                client.stopWithSavepoint(false, savepointDir.toUri().toString(), format)
                        .get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        awaitStatus(JobStatus.FINISHED);
        return path;
    }

    /** Waits for the job to reach the end of its input and returns every key's final state. */
    public Map<Long, KeyFinalState> awaitFinalStates() throws Exception {
        try {
            client.getJobExecutionResult().get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError(describe() + " did not finish" + failureCause(), e);
        }
        verifyRestoredFrom(
                cluster.getArchivedExecutionGraph(id()).get().getCheckpointStatsSnapshot());
        if (JobRecorder.duplicateKeys(runId) > 0) {
            throw new AssertionError(
                    describe()
                            + " emitted a final state twice for "
                            + JobRecorder.duplicateKeys(runId)
                            + " keys");
        }
        return JobRecorder.finalStates(runId);
    }

    /** Class names of the keyed state backends its stateful subtasks ran on. */
    public Set<String> keyedBackends() {
        return JobRecorder.keyedBackends(runId);
    }

    /** Final states, if any, that this job emitted although it was not allowed to finish. */
    public Map<Long, KeyFinalState> finalStatesSoFar() {
        return JobRecorder.finalStates(runId);
    }

    private void cancel() throws Exception {
        client.cancel().get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        awaitStatus(JobStatus.CANCELED);
    }

    /** Waits until the job is in that state; fails if it ends in another one. */
    public void awaitStatus(JobStatus expected) throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        JobStatus status;
        while ((status = cluster.getJobStatus(id()).get()) != expected) {
            if (status.isGloballyTerminalState() || System.nanoTime() > deadline) {
                throw new AssertionError(
                        describe() + " is " + status + ", expected " + expected + failureCause());
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /** A restore that Flink silently skipped would look like a fresh start: refuse it. */
    private void verifyRestoredFrom(@Nullable CheckpointStatsSnapshot stats) {
        if (restorePath == null) {
            return;
        }
        RestoredCheckpointStats restored =
                stats == null ? null : stats.getLatestRestoredCheckpoint();
        if (restored == null
                || !normalize(restored.getExternalPath()).equals(normalize(restorePath))) {
            throw new AssertionError(
                    describe()
                            + " was to restore "
                            + restorePath
                            + " but restored "
                            + (restored == null ? "nothing" : restored.getExternalPath()));
        }
    }

    private String failureCause() throws Exception {
        AccessExecutionGraph graph = cluster.getArchivedExecutionGraph(id()).get();
        ErrorInfo failure = graph.getFailureInfo();
        return failure == null ? "" : ", failure:\n" + failure.getExceptionAsString();
    }

    private static String lastCheckpointFailure(@Nullable CheckpointStatsSnapshot stats) {
        if (stats == null || stats.getHistory().getLatestFailedCheckpoint() == null) {
            return "none";
        }
        return String.valueOf(stats.getHistory().getLatestFailedCheckpoint().getFailureMessage());
    }

    private String describe() {
        return "job "
                + id()
                + " (parallelism "
                + parallelism
                + (restorePath == null ? ", fresh" : ", restored from " + restorePath)
                + ")";
    }

    private static long checkpointNumber(Path dir) {
        return Long.parseLong(dir.getFileName().toString().substring("chk-".length()));
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
