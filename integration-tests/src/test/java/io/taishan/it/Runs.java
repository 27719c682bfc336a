package io.taishan.it;

import static io.taishan.it.Scenarios.AS_FAST_AS_POSSIBLE;
import static io.taishan.it.Scenarios.SLOW;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.RunningJob;
import java.util.ArrayList;
import java.util.List;
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
    }

    private final JobHarness harness;
    private final List<RunningJob> interrupted = new ArrayList<>();
    private final List<RunningJob> all = new ArrayList<>();
    private long startedNanos;

    Runs(JobHarness harness) {
        this.harness = harness;
    }

    RunningJob start(int parallelism, String restorePath) throws Exception {
        return track(harness.start(parallelism, SLOW, restorePath));
    }

    RunningJob startToEnd(int parallelism, String restorePath) throws Exception {
        return track(harness.start(parallelism, AS_FAST_AS_POSSIBLE, restorePath));
    }

    private RunningJob track(RunningJob job) {
        startedNanos = System.nanoTime();
        all.add(job);
        return job;
    }

    /** Ends the job as told and returns what the next run restores from. */
    String end(RunningJob job, Exit exit) throws Exception {
        String path = exit.apply(job);
        interrupted.add(job);
        log(job, "ended, " + exit + ": " + path);
        return path;
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
