package io.taishan.it;

import static io.taishan.it.Scenarios.AS_FAST_AS_POSSIBLE;
import static io.taishan.it.Scenarios.SLOW;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.job.OpenedSubtask;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.annotation.Nullable;
import org.apache.flink.core.execution.SavepointFormatType;

/** The runs of one scenario, with a line per run on stdout for the report. */
final class Runs {

    /** The ways a run is ended so that a later run can restore it. */
    enum Exit {
        RETAINED_CHECKPOINT,
        CANONICAL_SAVEPOINT_THEN_CANCEL,
        CANONICAL_STOP_WITH_SAVEPOINT,
        NATIVE_SAVEPOINT_THEN_CANCEL,
        NATIVE_STOP_WITH_SAVEPOINT;

        String apply(RunningJob job) throws Exception {
            switch (this) {
                case RETAINED_CHECKPOINT:
                    return job.cancelWithRetainedCheckpoint();
                case CANONICAL_SAVEPOINT_THEN_CANCEL:
                    return job.savepointThenCancel(SavepointFormatType.CANONICAL);
                case CANONICAL_STOP_WITH_SAVEPOINT:
                    return job.stopWithSavepoint(SavepointFormatType.CANONICAL);
                case NATIVE_SAVEPOINT_THEN_CANCEL:
                    return job.savepointThenCancel(SavepointFormatType.NATIVE);
                case NATIVE_STOP_WITH_SAVEPOINT:
                    return job.stopWithSavepoint(SavepointFormatType.NATIVE);
                default:
                    throw new IllegalStateException(name());
            }
        }

        /** A canonical savepoint holds the entries themselves: every backend loads them. */
        boolean isCanonical() {
            return this == CANONICAL_SAVEPOINT_THEN_CANCEL || this == CANONICAL_STOP_WITH_SAVEPOINT;
        }
    }

    /** What a run left behind for the next one, and how. */
    record Restore(String path, Exit exit) {}

    private final JobHarness harness;
    private final List<RunningJob> interrupted = new ArrayList<>();
    private final List<RunningJob> all = new ArrayList<>();
    private long startedNanos;

    Runs(JobHarness harness) {
        this.harness = harness;
    }

    RunningJob start(int parallelism, @Nullable Restore from) throws Exception {
        return track(harness.start(parallelism, SLOW, from == null ? null : from.path()), from);
    }

    RunningJob startToEnd(int parallelism, Restore from) throws Exception {
        return track(harness.start(parallelism, AS_FAST_AS_POSSIBLE, from.path()), from);
    }

    private RunningJob track(RunningJob job, @Nullable Restore from) throws Exception {
        startedNanos = System.nanoTime();
        all.add(job);
        if (from != null && harness.backend().restoresByMetadata()) {
            checkRestore(job, from);
        }
        return job;
    }

    /**
     * A retained checkpoint or native savepoint is restored from the remote snapshots alone: no
     * subtask writes anything, every owned shard comes from a snapshot. A canonical savepoint is
     * the one restore that loads entries; that it shows writes proves the check can see them.
     */
    private void checkRestore(RunningJob job, Restore from) throws Exception {
        Map<Integer, OpenedSubtask> opened = job.awaitOpenedSubtasks();
        long maxMillis = 0;
        long writes = 0;
        long fromSnapshots = 0;
        long downloaded = 0;
        for (OpenedSubtask subtask : opened.values()) {
            assertThat(subtask.hasTaishanMetrics())
                    .as("Taishan metrics of subtask %s of job %s", subtask, job.id())
                    .isTrue();
            maxMillis = Math.max(maxMillis, subtask.restoreMillis());
            writes += subtask.restoreWrites();
            fromSnapshots += subtask.shardsFromSnapshots();
            downloaded += subtask.downloadedBytes();
            if (!from.exit().isCanonical()) {
                assertThat(subtask.restoreWrites())
                        .as("ops written by the restore of %s, subtask %s", from, subtask)
                        .isZero();
                assertThat(subtask.shardsFromSnapshots())
                        .as(
                                "shards cloned or rolled back by the restore of %s, subtask %s",
                                from, subtask)
                        .isEqualTo(subtask.keyGroups());
                assertThat(subtask.shardsOpened())
                        .as(
                                "shards opened without a snapshot by the restore of %s, subtask %s",
                                from, subtask)
                        .isZero();
            }
        }
        if (from.exit().isCanonical()) {
            assertThat(writes)
                    .as("ops written by loading the canonical savepoint %s", from)
                    .isPositive();
        }
        log(
                job,
                String.format(
                        "restored %s in %d ms (slowest of %d subtasks): %d shards from"
                                + " snapshots, %d ops written, %d bytes downloaded",
                        from.exit(), maxMillis, opened.size(), fromSnapshots, writes, downloaded));
    }

    /** Ends the job as told and returns what the next run restores from. */
    Restore end(RunningJob job, Exit exit) throws Exception {
        String path = exit.apply(job);
        interrupted.add(job);
        log(job, "ended, " + exit + ": " + path);
        return new Restore(path, exit);
    }

    void finished(RunningJob job) {
        log(job, "ran to the end of its input");
    }

    private void log(RunningJob job, String what) {
        System.out.printf(
                "[%s] p=%d %s after %d ms%n",
                harness.backend().keyedBackendClassName(),
                job.parallelism(),
                what,
                (System.nanoTime() - startedNanos) / 1_000_000);
    }

    void assertEveryRunUsed(String keyedBackendClassName) {
        for (RunningJob job : all) {
            assertThat(job.keyedBackends())
                    .as("keyed backends of job %s", job.id())
                    .containsExactly(keyedBackendClassName);
        }
    }

    /** Else the pace is too fast for the machine and the scenario tests less than it says. */
    void assertNoInterruptedRunReachedTheEnd() {
        for (RunningJob job : interrupted) {
            assertThat(job.finalStatesSoFar())
                    .as("final states emitted by interrupted job %s", job.id())
                    .isEmpty();
        }
    }
}
