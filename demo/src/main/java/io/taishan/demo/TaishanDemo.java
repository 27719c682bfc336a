package io.taishan.demo;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.server.EmbeddedKvServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.LongSummaryStatistics;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.checkpoint.RestoredCheckpointStats;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.util.FileUtils;

/**
 * The one-command demo (issue 3, acceptance 4): a Flink DataStream job whose keyed state (value,
 * list, map) and timers live in an embedded Taishan kv-server. It is checkpointed, cancelled with a
 * retained checkpoint, restored at parallelism 2 → 4 and again at 1, and runs to the end of its
 * input; the story on stdout tells the records, the checkpoints, the rescales, the restore times
 * and what the store holds, and ends with a check of every key's final state against what the input
 * implies. Exit 0 when all of it holds, 1 with the reason when not.
 */
public final class TaishanDemo {
    private static final String FACTORY = "io.taishan.backend.TaishanStateBackendFactory";
    private static final int MAX_PARALLELISM = 32;
    private static final int SLOTS = 4;
    private static final SensorInput INPUT = new SensorInput(100, 120);
    private static final double PACED_RECORDS_PER_SECOND = 300;
    private static final Duration CHECKPOINT_INTERVAL = Duration.ofSeconds(1);
    private static final int CHECKPOINTS_PER_RUN = 2;

    private TaishanDemo() {}

    public static void main(String[] args) {
        Story.runAndExit(TaishanDemo::run);
    }

    private static void run() throws Exception {
        Path workDir = Files.createTempDirectory("taishan-demo");
        try (EmbeddedKvServer server = EmbeddedKvServer.start();
                KvStore kv =
                        KvStores.connect(KvClientConfig.forAddresses(server.address()).build())) {
            Path checkpointDir = workDir.resolve("checkpoints");
            Configuration config = flinkConfiguration(server.address(), checkpointDir);
            Story.say(
                    "Taishan demo: a Flink job whose keyed state and timers live in a Taishan"
                            + " kv-server");
            Story.say(
                    "  kv-server  embedded, gRPC on %s, RocksDB in %s",
                    server.address(), server.dataDir());
            Story.say("  Flink      MiniCluster in this JVM, 1 TaskManager with %d slots", SLOTS);
            Story.say("             state.backend.type: %s", FACTORY);
            Story.say("             taishan.kv.address: %s", server.address());
            Story.say(
                    "             checkpoints every %d s into %s, retained on cancel",
                    CHECKPOINT_INTERVAL.toSeconds(), checkpointDir.toUri());
            Story.say(
                    "  job        %,d readings of %d sensors -> keyBy(sensor) -> %s -> reports;"
                            + " per sensor:",
                    INPUT.totalReadings(), INPUT.sensors(), DemoJob.STATS_OPERATOR);
            Story.say(
                    "             value state (count, sum, drain-timer), list state (undrained"
                            + " values), map state (histogram),");
            Story.say(
                    "             a processing-time timer that drains the list into the map, an"
                            + " event-time timer that reports at end of input");
            Story.say(
                    "             max parallelism %d: %d key groups, so %d shards in each table;"
                            + " the source always reads with %d subtasks",
                    MAX_PARALLELISM, MAX_PARALLELISM, MAX_PARALLELISM, DemoJob.SOURCE_PARALLELISM);

            StoreInspector store = new StoreInspector(kv, SensorStats.STATE_NAMES);
            MiniCluster cluster =
                    new MiniCluster(
                            new MiniClusterConfiguration.Builder()
                                    .setConfiguration(config)
                                    .setNumTaskManagers(1)
                                    .setNumSlotsPerTaskManager(SLOTS)
                                    .build());
            long clusterStart = System.nanoTime();
            cluster.start();
            Story.say("  (MiniCluster up in %d ms)", Story.millisSince(clusterStart));
            List<JobRun> runs = new ArrayList<>();
            try {
                Story.say("");
                Story.say(
                        "Run 1: parallelism 2, fresh start, source paced at %,.0f readings/s",
                        PACED_RECORDS_PER_SECOND);
                JobRun run1 =
                        submit(
                                cluster,
                                config,
                                "run 1",
                                2,
                                PACED_RECORDS_PER_SECOND,
                                null,
                                checkpointDir);
                runs.add(run1);
                String checkpoint1 = cancelAfterCheckpoints(run1, store);

                Story.say("");
                Story.say("Run 2: rescaled 2 -> 4, restored from run 1's retained checkpoint");
                JobRun run2 =
                        submit(
                                cluster,
                                config,
                                "run 2",
                                4,
                                PACED_RECORDS_PER_SECOND,
                                checkpoint1,
                                checkpointDir);
                runs.add(run2);
                tellRestore(run2, store, run1);
                String checkpoint2 = cancelAfterCheckpoints(run2, store);

                Story.say("");
                Story.say(
                        "Run 3: rescaled 4 -> 1, restored from run 2's retained checkpoint,"
                                + " source unpaced, runs to the end of its input");
                JobRun run3 = submit(cluster, config, "run 3", 1, 0, checkpoint2, checkpointDir);
                runs.add(run3);
                tellRestore(run3, store, run2);
                run3.awaitFinished();
                Story.say(
                        "  finished after %.1f s: %,d readings processed, %,d drain timers and %,d"
                                + " end-of-input timers fired",
                        run3.secondsSinceSubmit(),
                        DemoRecorder.processedCount(run3.name()),
                        DemoRecorder.processingTimersFired(run3.name()),
                        DemoRecorder.eventTimersFired(run3.name()));

                Story.say("");
                tellStore(store, runs);
                Story.say("");
                check(runs, run3);
            } finally {
                cluster.closeAsync().get(JobRun.STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
        } finally {
            FileUtils.deleteDirectoryQuietly(workDir.toFile());
        }
    }

    private static Configuration flinkConfiguration(String kvAddress, Path checkpointDir) {
        Configuration config = new Configuration();
        // What a user puts in the Flink configuration to run on Taishan: nothing else.
        config.set(StateBackendOptions.STATE_BACKEND, FACTORY);
        config.setString("taishan.kv.address", kvAddress);

        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, CHECKPOINT_INTERVAL);
        config.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpointDir.toUri().toString());
        config.set(
                CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        // The number of key groups, hence of shards per table, must not change across restores.
        config.set(PipelineOptions.MAX_PARALLELISM, MAX_PARALLELISM);
        config.set(PipelineOptions.GENERIC_TYPES, false);
        // The unpaced last run is back-pressured; fewer buffered records let its barriers through.
        config.set(TaskManagerOptions.BUFFER_DEBLOAT_ENABLED, true);
        // A failure must end the demo with its cause, not restart the job forever.
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        config.set(RestOptions.BIND_PORT, "0");
        config.setString(
                "metrics.reporter.taishan.factory.class",
                TaishanMetricsReporter.Factory.class.getName());
        return config;
    }

    private static JobRun submit(
            MiniCluster cluster,
            Configuration config,
            String name,
            int parallelism,
            double recordsPerSecond,
            @Nullable String restorePath,
            Path checkpointDir)
            throws Exception {
        return JobRun.submit(
                cluster,
                DemoJob.jobGraph(config, name, INPUT, parallelism, recordsPerSecond, restorePath),
                name,
                restorePath,
                checkpointDir);
    }

    private static String cancelAfterCheckpoints(JobRun run, StoreInspector store)
            throws Exception {
        run.awaitCheckpoints(CHECKPOINTS_PER_RUN);
        String retained = run.cancelKeepingCheckpoint();
        Story.say(
                "  cancelled after %.1f s: %,d readings processed, %,d drain timers fired",
                run.secondsSinceSubmit(),
                DemoRecorder.processedCount(run.name()),
                DemoRecorder.processingTimersFired(run.name()));
        Story.say("  retained checkpoint: %s", retained);
        if (!DemoRecorder.totals(run.name()).isEmpty()) {
            throw new DemoFailure(run.name() + " reported final totals although it was cancelled");
        }
        TableInfo table = store.tableOf(run.id());
        long checkpointId = checkpointId(retained);
        List<SnapshotInfo> snapshot = store.snapshots(table.name()).get(checkpointId);
        if (snapshot == null) {
            throw new DemoFailure(
                    "the store has no snapshot of retained checkpoint "
                            + checkpointId
                            + " in "
                            + table.name());
        }
        Story.say(
                "  in the store: table %s (%d shards = key groups); checkpoint %d is %d shard"
                        + " snapshots, %s",
                table.name(),
                table.shardCount(),
                checkpointId,
                snapshot.size(),
                Story.bytes(snapshot.stream().mapToLong(SnapshotInfo::sizeBytes).sum()));
        long t0 = System.nanoTime();
        Map<String, Long> entries = store.entriesInSnapshot(table, checkpointId);
        Story.say(
                "  checkpoint %d holds %s; counted by scanning a clone, %d ms",
                checkpointId, StoreInspector.describe(entries), Story.millisSince(t0));
        return retained;
    }

    private static void tellRestore(JobRun run, StoreInspector store, JobRun from)
            throws Exception {
        run.awaitStatefulSubtasksRunning();
        RestoredCheckpointStats restored = run.verifiedRestore();
        Map<Integer, Long> backendMillis =
                TaishanMetricsReporter.restoreMillis(run.id().toString());
        LongSummaryStatistics backend =
                backendMillis.values().stream().mapToLong(Long::longValue).summaryStatistics();
        LongSummaryStatistics initialization = run.initializationMillis();
        if (backend.getCount() == 0) {
            throw new DemoFailure(run.name() + ": no Taishan backend reported a restore time");
        }
        Story.say(
                "  restored checkpoint %d: Taishan backend restore %s per subtask (%d %s;"
                        + " metadata only: each key group's shard cloned from %s's snapshot into"
                        + " table %s)",
                restored.getCheckpointId(),
                range(backend),
                backend.getCount(),
                backend.getCount() == 1 ? "subtask" : "subtasks",
                from.name(),
                store.tableOf(run.id()).name());
        Story.say(
                "  Flink: subtasks of %s initialized (state restore included) in %s",
                DemoJob.STATS_OPERATOR, range(initialization));
    }

    private static void tellStore(StoreInspector store, List<JobRun> runs) {
        Story.say("The store at the end (through a gRPC client):");
        List<TableInfo> tables = store.tables();
        Story.say("  %d tables, one per job run's keyed operator:", tables.size());
        for (JobRun run : runs) {
            TableInfo table = store.tableOf(run.id());
            Map<Long, List<SnapshotInfo>> snapshots = store.snapshots(table.name());
            Story.say(
                    "  %s  (%s) snapshots of checkpoints %s",
                    table.name(), run.name(), snapshots.isEmpty() ? "none" : snapshots.keySet());
            Story.say(
                    "      RPCs of its backend: %s",
                    TaishanMetricsReporter.rpcCounts(run.id().toString()));
        }
        JobRun last = runs.get(runs.size() - 1);
        Story.say(
                "  live entries of %s's table: %s",
                last.name(), StoreInspector.describe(store.liveEntries(store.tableOf(last.id()))));
    }

    private static void check(List<JobRun> runs, JobRun last) {
        Map<Long, SensorTotals> reported = DemoRecorder.totals(last.name());
        long duplicates = DemoRecorder.duplicateReports(last.name());
        List<String> wrong = new ArrayList<>();
        long expectedSum = 0;
        for (long sensor = 0; sensor < INPUT.sensors(); sensor++) {
            SensorTotals expected = INPUT.expectedTotals(sensor);
            expectedSum += expected.sum;
            SensorTotals actual = reported.get(sensor);
            if (actual == null) {
                wrong.add("sensor " + sensor + ": no report");
            } else if (!actual.sameAs(expected)) {
                wrong.add("got " + actual + ", expected " + expected);
            }
        }
        if (duplicates > 0 || reported.size() != INPUT.sensors() || !wrong.isEmpty()) {
            throw new DemoFailure(
                    "the final state is wrong: "
                            + reported.size()
                            + " sensors reported, "
                            + duplicates
                            + " reported twice; "
                            + wrong.size()
                            + " wrong, first: "
                            + wrong.stream().limit(3).toList());
        }
        long processed = runs.stream().mapToLong(r -> DemoRecorder.processedCount(r.name())).sum();
        Story.say(
                "Check: all %d sensors reported once, each with count, sum and histogram exactly"
                        + " as the input implies (%,d readings, sum %,d) - OK",
                INPUT.sensors(), INPUT.totalReadings(), expectedSum);
        Story.say(
                "  readings processed over the %d runs: %,d = %,d + %,d processed again after the"
                        + " restores (what came after each retained checkpoint, whose effects the"
                        + " restore rolled back)",
                runs.size(), processed, INPUT.totalReadings(), processed - INPUT.totalReadings());
    }

    private static long checkpointId(String checkpointPath) {
        String trimmed = checkpointPath.replaceAll("/+$", "");
        return Long.parseLong(trimmed.substring(trimmed.lastIndexOf("chk-") + "chk-".length()));
    }

    private static String range(LongSummaryStatistics millis) {
        if (millis.getCount() == 0) {
            return "? ms";
        }
        return millis.getMin() == millis.getMax()
                ? millis.getMin() + " ms"
                : millis.getMin() + "-" + millis.getMax() + " ms";
    }
}
