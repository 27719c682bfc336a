package io.taishan.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.ReferenceRun;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.it.job.EventSchedule;
import io.taishan.it.job.KeyFinalState;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A kv-server crash while the job happens to be quiet must never be survived silently (issue 6,
 * §1): the job checkpoints, writes more, then its source holds, so the job sends no call at all
 * while the kv-server is killed with SIGKILL and restarted on the same port and data dir; then the
 * source goes on to the end of its input. Every key's final state must equal that of an
 * uninterrupted HashMap run. With the WAL off the writes since the last flush are gone, so the job
 * must have failed over to its checkpoint; with the WAL on the process crash lost nothing and the
 * job just goes on.
 *
 * <p>Checkpoints are only taken when the test asks, so none can happen to fall into the downtime
 * and fail the job over for another reason.
 */
class KvServerCrashITCase {
    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    /** 32 keys over the 128 key groups, 50 records each, in 4 splits of 400 records each. */
    private static final EventSchedule SCHEDULE = new EventSchedule(32, 50, 4);

    /** Where the source holds while the checkpoint is taken. */
    private static final long CHECKPOINTED_POSITION = 100;

    /**
     * Where it holds while the kv-server crashes: the records in between were written, and
     * acknowledged, after the checkpoint.
     */
    private static final long CRASH_POSITION = 200;

    /**
     * Well past the write queue's flush interval (50 ms) and the drain timers' delay: every write
     * acknowledged, nothing in flight.
     */
    private static final Duration QUIET = Duration.ofMillis(500);

    /** Long enough for a write batch to reconnect to the restarted node and get its answer. */
    private static final Duration WRITE_REFUSED = Duration.ofSeconds(3);

    @Test
    @Timeout(240)
    void withTheWalOffTheJobFailsOverAndEndsExact(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        RunningJob job = crashWhileQuiet(cluster, workDir, "");
        assertThat(job.failovers())
                .as("failovers after a crash that lost acknowledged writes")
                .isPositive();
    }

    @Test
    @Timeout(240)
    void withTheWalOnTheJobGoesOnWithoutFailoverAndEndsExact(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        RunningJob job = crashWhileQuiet(cluster, workDir, "wal.enabled = true\n");
        assertThat(job.failovers()).as("failovers after a process crash the WAL survived").isZero();
    }

    private static RunningJob crashWhileQuiet(
            MiniCluster cluster, Path workDir, String serverProperties) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        Path serverConfig =
                Files.writeString(workDir.resolve("server.properties"), serverProperties);
        try (TaishanBackendFixture backend =
                TaishanBackendFixture.start(
                        workDir.resolve("backend"), "--config", serverConfig.toString())) {
            JobHarness harness = new JobHarness(cluster, backend, SCHEDULE, workDir);
            int splits = SCHEDULE.splitCount();
            RunningJob job =
                    harness.start(
                            2,
                            Scenarios.AS_FAST_AS_POSSIBLE,
                            null,
                            failoverOnlyOnDemandCheckpoints(),
                            CHECKPOINTED_POSITION);
            job.awaitQuietAfter(splits * CHECKPOINTED_POSITION, QUIET).checkpoint();
            job.holdSourceAt(CRASH_POSITION).awaitQuietAfter(splits * CRASH_POSITION, QUIET);
            assertThat(job.finalStatesSoFar()).as("final states before the crash").isEmpty();

            backend.crashAndRestartServer();
            // One more record per split, then a pause: its writes reach the restarted node, which
            // refuses the old lease (or keeps it, with the WAL on). Reads alone need not reach the
            // node (the read cache and filters answer many), and a job that ended before the
            // refusal came back would end without a failover: its state is discarded then anyway,
            // but a running job must fail over at its next write, which the rest of the input is.
            job.holdSourceAt(CRASH_POSITION + 1)
                    .awaitQuietAfter(splits * (CRASH_POSITION + 1), WRITE_REFUSED);
            job.releaseSource();

            Map<Long, KeyFinalState> actual = job.awaitFinalStates();
            assertThat(job.finalStatesSoFar()).hasSameSizeAs(expected);
            FinalStates.assertSame(actual, expected, "after a kv-server crash while quiet");
            return job;
        }
    }

    private static Configuration failoverOnlyOnDemandCheckpoints() {
        Configuration config = new Configuration();
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        config.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3);
        config.set(
                RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(200));
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofHours(1));
        // Finished tasks would otherwise wait for a final periodic checkpoint, an hour away.
        config.set(CheckpointingOptions.ENABLE_CHECKPOINTS_AFTER_TASKS_FINISH, false);
        return config;
    }
}
