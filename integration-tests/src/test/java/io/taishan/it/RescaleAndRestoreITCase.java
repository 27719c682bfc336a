package io.taishan.it;

import static io.taishan.it.Runs.Exit.CANONICAL_SAVEPOINT_THEN_CANCEL;
import static io.taishan.it.Runs.Exit.CANONICAL_STOP_WITH_SAVEPOINT;
import static io.taishan.it.Runs.Exit.NATIVE_SAVEPOINT_THEN_CANCEL;
import static io.taishan.it.Runs.Exit.NATIVE_STOP_WITH_SAVEPOINT;
import static io.taishan.it.Runs.Exit.RETAINED_CHECKPOINT;
import static io.taishan.it.Scenarios.LONG_RUN;
import static io.taishan.it.Scenarios.SCHEDULE;

import io.taishan.it.harness.BackendFixture;
import io.taishan.it.harness.BackendUnderTest;
import io.taishan.it.harness.Backends;
import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.ReferenceRun;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.it.job.KeyFinalState;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 3, acceptance 2: the job is cancelled with a retained checkpoint and restored at
 * parallelism 2 → 4 → 1, then the same through canonical savepoints and through native savepoints,
 * then runs to its end; its final per-key state must equal that of one uninterrupted run on
 * HashMap. Every run checkpoints at least once after its restore before it is ended, and the
 * parallelism-4 run of each path runs long enough to reveal a lost processing-time timer.
 */
class RescaleAndRestoreITCase {

    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    static Stream<BackendUnderTest> backends() {
        return Backends.selected(
                Stream.of(Backends.hashMap(), Backends.rocksDb(), TaishanBackendFixture.backend()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("backends")
    @Timeout(300)
    void finalStateSurvivesRescalingThroughCheckpointsAndSavepoints(
            BackendUnderTest backendUnderTest,
            @InjectMiniCluster MiniCluster cluster,
            @TempDir Path workDir)
            throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);

        try (BackendFixture backend = backendUnderTest.start(workDir.resolve("backend"))) {
            Runs runs = new Runs(new JobHarness(cluster, backend, SCHEDULE, workDir));

            RunningJob job = runs.start(2, null).awaitCompletedCheckpoints(2);
            Runs.Restore path = runs.end(job, RETAINED_CHECKPOINT);
            job = runs.start(4, path).awaitCompletedCheckpoints(1).keepRunning(LONG_RUN);
            path = runs.end(job, RETAINED_CHECKPOINT);
            job = runs.start(1, path).awaitCompletedCheckpoints(1);

            path = runs.end(job, CANONICAL_SAVEPOINT_THEN_CANCEL);
            job = runs.start(2, path).awaitCompletedCheckpoints(1);
            path = runs.end(job, CANONICAL_STOP_WITH_SAVEPOINT);
            job = runs.start(4, path).awaitCompletedCheckpoints(1).keepRunning(LONG_RUN);
            path = runs.end(job, CANONICAL_SAVEPOINT_THEN_CANCEL);
            job = runs.start(1, path).awaitCompletedCheckpoints(1);

            path = runs.end(job, NATIVE_STOP_WITH_SAVEPOINT);
            job = runs.start(2, path).awaitCompletedCheckpoints(1);
            path = runs.end(job, NATIVE_SAVEPOINT_THEN_CANCEL);
            job = runs.start(4, path).awaitCompletedCheckpoints(1).keepRunning(LONG_RUN);
            path = runs.end(job, NATIVE_STOP_WITH_SAVEPOINT);

            RunningJob last = runs.startToEnd(1, path);
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            runs.finished(last);

            runs.assertEveryRunUsed(backend.keyedBackendClassName());
            runs.assertNoInterruptedRunReachedTheEnd();
            FinalStates.assertSame(
                    actual, expected, backendUnderTest + " after 2→4→1 three times vs. reference");
        }
    }
}
