package io.taishan.it;

import static io.taishan.it.Runs.Exit.NATIVE_SAVEPOINT_THEN_CANCEL;
import static io.taishan.it.Runs.Exit.RETAINED_CHECKPOINT;
import static io.taishan.it.Scenarios.SCHEDULE;

import io.taishan.it.harness.BackendFixture;
import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.ReferenceRun;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.it.job.KeyFinalState;
import java.nio.file.Path;
import java.util.Map;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flink's largest max parallelism, 32,768 key groups, on Taishan: the job is restored 2 → 4 → 1
 * through retained checkpoints and once through a native savepoint, each restore metadata only (no
 * subtask writes, every owned shard from a snapshot), then runs to its end; its final per-key state
 * must equal one uninterrupted run's on HashMap. Each subtask owns thousands of key groups, so
 * every open, checkpoint and restore crosses a table of 32,768 shards.
 */
class ManyKeyGroupsITCase {
    private static final int KEY_GROUPS = 32768;

    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    @Test
    @Timeout(300)
    void aJobOf32768KeyGroupsRescales2To4To1Exactly(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (BackendFixture backend = TaishanBackendFixture.start(workDir.resolve("backend"))) {
            Runs runs = new Runs(new JobHarness(cluster, backend, SCHEDULE, workDir, KEY_GROUPS));

            RunningJob job = runs.start(2, null).awaitCompletedCheckpoints(2);
            Runs.Restore path = runs.end(job, RETAINED_CHECKPOINT);
            job = runs.start(4, path).awaitCompletedCheckpoints(2);
            path = runs.end(job, NATIVE_SAVEPOINT_THEN_CANCEL);
            job = runs.start(4, path).awaitCompletedCheckpoints(1);
            path = runs.end(job, RETAINED_CHECKPOINT);
            job = runs.start(1, path).awaitCompletedCheckpoints(1);
            path = runs.end(job, RETAINED_CHECKPOINT);

            RunningJob last = runs.startToEnd(2, path);
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            runs.finished(last);

            runs.assertEveryRunUsed(backend.keyedBackendClassName());
            runs.assertNoInterruptedRunReachedTheEnd();
            FinalStates.assertSame(
                    actual, expected, "32,768 key groups after 2→4→4→1→2 vs. reference");
        }
    }
}
