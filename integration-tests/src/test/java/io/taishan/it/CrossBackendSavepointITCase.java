package io.taishan.it;

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
 * Issue 3, acceptance 2, last part: the migration path onto another backend. A job on HashMap is
 * stopped with a canonical savepoint; the same job, configured for the target backend, restores it
 * at another parallelism, checkpoints on its own, is cancelled and restored once more from that
 * retained checkpoint, and runs to its end. Its final per-key state must equal the reference.
 */
class CrossBackendSavepointITCase {

    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    static Stream<BackendUnderTest> targets() {
        return Backends.selected(
                Stream.of(Backends.hashMap(), Backends.rocksDb(), TaishanBackendFixture.backend()));
    }

    @ParameterizedTest(name = "hashmap -> {0}")
    @MethodSource("targets")
    @Timeout(180)
    void canonicalSavepointOfHashMapRestoresOnTarget(
            BackendUnderTest target, @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir)
            throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);

        Runs.Restore savepoint;
        try (BackendFixture hashMap = Backends.hashMap().start(workDir.resolve("hashmap"))) {
            Runs runs =
                    new Runs(new JobHarness(cluster, hashMap, SCHEDULE, workDir.resolve("from")));
            RunningJob job = runs.start(2, null).awaitCompletedCheckpoints(2);
            savepoint = runs.end(job, Runs.Exit.CANONICAL_STOP_WITH_SAVEPOINT);
            runs.assertEveryRunUsed(hashMap.keyedBackendClassName());
            runs.assertNoInterruptedRunReachedTheEnd();
        }

        try (BackendFixture backend = target.start(workDir.resolve("target"))) {
            Runs runs = new Runs(new JobHarness(cluster, backend, SCHEDULE, workDir.resolve("to")));
            RunningJob job = runs.start(3, savepoint).awaitCompletedCheckpoints(2);
            Runs.Restore checkpoint = runs.end(job, Runs.Exit.RETAINED_CHECKPOINT);
            RunningJob last = runs.startToEnd(2, checkpoint);
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            runs.finished(last);

            runs.assertEveryRunUsed(backend.keyedBackendClassName());
            runs.assertNoInterruptedRunReachedTheEnd();
            FinalStates.assertSame(
                    actual,
                    expected,
                    "hashmap canonical savepoint -> " + target + " vs. reference");
        }
    }
}
