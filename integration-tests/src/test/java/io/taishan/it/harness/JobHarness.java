package io.taishan.it.harness;

import io.taishan.it.job.EventSchedule;
import io.taishan.it.job.SourceGate;
import io.taishan.it.job.StatefulJob;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.annotation.Nullable;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.util.TestStreamEnvironment;

/**
 * Submits {@link StatefulJob} to a MiniCluster the way a user would: everything, the backend
 * included, through the job's configuration; checkpoints through the JobManager into file storage
 * and retained on cancel; restores through {@code execution.savepoint.path}.
 */
public final class JobHarness {
    /** Fixed per harness, because the number of key groups cannot change across a restore. */
    public static final int MAX_PARALLELISM = 128;

    static final Duration CHECKPOINT_INTERVAL = Duration.ofMillis(200);

    private final MiniCluster cluster;
    private final BackendFixture backend;
    private final EventSchedule schedule;
    private final Path checkpointDir;
    private final Path savepointDir;
    private final int maxParallelism;

    public JobHarness(
            MiniCluster cluster, BackendFixture backend, EventSchedule schedule, Path workDir) {
        this(cluster, backend, schedule, workDir, MAX_PARALLELISM);
    }

    /** With {@code maxParallelism} key groups instead of {@link #MAX_PARALLELISM}. */
    public JobHarness(
            MiniCluster cluster,
            BackendFixture backend,
            EventSchedule schedule,
            Path workDir,
            int maxParallelism) {
        this.cluster = cluster;
        this.backend = backend;
        this.schedule = schedule;
        this.checkpointDir = workDir.resolve("checkpoints");
        this.savepointDir = workDir.resolve("savepoints");
        this.maxParallelism = maxParallelism;
    }

    public BackendFixture backend() {
        return backend;
    }

    /**
     * @param recordsPerSecondPerSplit the source's pace; {@code <= 0} runs the job as fast as it
     *     can, to its end
     * @param restorePath a retained checkpoint or savepoint to restore from, or {@code null}
     */
    public RunningJob start(
            int parallelism, double recordsPerSecondPerSplit, @Nullable String restorePath)
            throws Exception {
        return start(
                parallelism,
                recordsPerSecondPerSplit,
                restorePath,
                new Configuration(),
                Long.MAX_VALUE);
    }

    /**
     * As {@link #start(int, double, String)}, with {@code overrides} applied last and the source
     * held at {@code holdSourceAt} from the start (see {@link RunningJob#holdSourceAt}).
     */
    public RunningJob start(
            int parallelism,
            double recordsPerSecondPerSplit,
            @Nullable String restorePath,
            Configuration overrides,
            long holdSourceAt)
            throws Exception {
        String runId = UUID.randomUUID().toString();
        SourceGate.holdAt(runId, holdSourceAt);
        Configuration config = jobConfiguration(restorePath);
        config.addAll(overrides);
        TestStreamEnvironment env =
                new TestStreamEnvironment(cluster, config, parallelism, List.of(), List.of());
        StatefulJob.define(env, runId, schedule, recordsPerSecondPerSplit);
        JobClient client = env.executeAsync("stateful-job p=" + parallelism);
        return new RunningJob(
                cluster, client, runId, parallelism, restorePath, checkpointDir, savepointDir);
    }

    private Configuration jobConfiguration(@Nullable String restorePath) {
        Configuration config = new Configuration();
        config.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.STREAMING);
        config.set(PipelineOptions.MAX_PARALLELISM, maxParallelism);
        // A failure must end the job, not restart it forever and look like a hang.
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, CHECKPOINT_INTERVAL);
        config.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpointDir.toUri().toString());
        config.set(CheckpointingOptions.SAVEPOINT_DIRECTORY, savepointDir.toUri().toString());
        config.set(
                CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        if (restorePath != null) {
            config.set(StateRecoveryOptions.SAVEPOINT_PATH, restorePath);
        }
        config.addAll(backend.configuration());
        return config;
    }
}
