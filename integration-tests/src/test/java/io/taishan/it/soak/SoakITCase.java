package io.taishan.it.soak;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.it.job.EventSchedule;
import io.taishan.it.job.ExpectedKeyState;
import io.taishan.it.job.KeyFinalState;
import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The soak (issue 6, §6): {@code StatefulJob} (value, list and map state, processing- and
 * event-time timers in the store) at a steady, moderate pace against one kv-server child JVM,
 * checkpointing every second, for {@code -Dsoak.duration} (default 10 minutes; {@code PT1H} for the
 * hour). Every few seconds {@link SoakSampler} writes a row of curves to {@code
 * target/soak/soak.csv}; at the end {@link SoakReport} draws them, {@link SoakBounds} judges them
 * against bounds stated in advance, and every key's final state must equal the model ({@link
 * ExpectedKeyState}) exactly.
 *
 * <p>Not in the default build: only {@code mvn -Psoak verify -pl integration-tests -am} runs it
 * (the profile also lifts the build's per-test and per-fork timeouts); elsewhere it is skipped.
 */
class SoakITCase {
    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    /** Set by the {@code soak} profile only. */
    private static final String DURATION_PROPERTY = "soak.duration";

    private static final int KEYS = 128;
    private static final int SPLITS = 8;
    private static final int PARALLELISM = 2;
    private static final int RETAINED_CHECKPOINTS = 1;
    private static final Duration CHECKPOINT_INTERVAL = Duration.ofSeconds(1);
    private static final Duration LIVE_HEAP_EVERY = Duration.ofSeconds(30);

    /** The job must make progress: no new record for this long fails the run at once. */
    private static final Duration MAX_STALL = Duration.ofMinutes(2);

    @Test
    void aLongCheckpointingJobHoldsItsBoundsAndEndsExact(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        String durationText = System.getProperty(DURATION_PROPERTY);
        assumeTrue(
                durationText != null && !durationText.isBlank(),
                "the soak runs only in its profile: mvn -Psoak verify -pl integration-tests -am");
        Duration duration = Duration.parse(durationText);
        double recordsPerSecond =
                Double.parseDouble(System.getProperty("soak.recordsPerSecond", "200"));
        Duration sampleEvery = Duration.parse(System.getProperty("soak.sampleInterval", "PT5S"));
        Path output = Path.of(System.getProperty("soak.outputDir", "target/soak"));
        // kv-server config lines, ';'-separated (the profile's default: a 32 MiB block cache).
        String serverProperties =
                String.join("\n", System.getProperty("soak.serverProperties", "").split(";"))
                        .trim();

        // Records per key so that the paced input lasts the duration.
        int recordsPerKey = (int) Math.ceil(duration.toMillis() / 1000.0 * recordsPerSecond / KEYS);
        EventSchedule schedule = new EventSchedule(KEYS, recordsPerKey, SPLITS);
        double perSplit = recordsPerSecond / SPLITS;
        // Pacing counts from each emission, so a loaded machine stretches the run; allow for it.
        Duration deadline = duration.multipliedBy(2).plusMinutes(10);

        Files.createDirectories(output);
        Properties run = new Properties();
        run.setProperty("duration", duration.toString());
        run.setProperty("schedule", schedule.toString());
        run.setProperty("records per second (paced)", fmt(recordsPerSecond));
        run.setProperty("parallelism", Integer.toString(PARALLELISM));
        run.setProperty("checkpoint interval", CHECKPOINT_INTERVAL.toString());
        run.setProperty("retained checkpoints", Integer.toString(RETAINED_CHECKPOINTS));
        run.setProperty("sample interval", sampleEvery.toString());
        run.setProperty(
                "kv-server config",
                serverProperties.isEmpty() ? "defaults" : serverProperties.replace("\n", "; "));
        run.setProperty("started", Instant.now().toString());
        run.setProperty("load average at start", loadAverage());
        run.setProperty("cpus", Integer.toString(Runtime.getRuntime().availableProcessors()));
        System.out.printf(
                "soak: %s, %s, %s records/s, checkpoints every %s, curves in %s%n",
                duration, schedule, fmt(recordsPerSecond), CHECKPOINT_INTERVAL, output);

        SoakCurve curve;
        RunningJob job;
        String ended;
        String serverHeap;
        Path serverConfig =
                Files.writeString(workDir.resolve("server.properties"), serverProperties + "\n");
        try (TaishanBackendFixture backend =
                TaishanBackendFixture.start(
                        workDir.resolve("backend"), "--config", serverConfig.toString())) {
            try {
                JobHarness harness = new JobHarness(cluster, backend, schedule, workDir);
                long start = System.nanoTime();
                job = harness.start(PARALLELISM, perSplit, null, soakConfig(), Long.MAX_VALUE);
                String kvAddress =
                        backend.configuration().getString(TaishanBackendFixture.ADDRESS_KEY, null);
                try (SoakSampler sampler =
                        new SoakSampler(
                                cluster,
                                job,
                                kvAddress,
                                backend.serverPid(),
                                backend.dataDir(),
                                workDir.resolve("checkpoints").resolve(job.id().toString()),
                                LIVE_HEAP_EVERY.toNanos(),
                                output.resolve("soak.csv"),
                                start)) {
                    serverHeap = sampler.serverHeapUnreachable();
                    ended = runAndSample(cluster, job, sampler, sampleEvery, deadline);
                    // What the finished job left on the server (a finished job's table stays).
                    sampler.sample(false);
                    String failure = sampler.latestCheckpointFailure();
                    run.setProperty("latest failed checkpoint", failure == null ? "none" : failure);
                    curve = sampler.curve();
                }
                run.setProperty("job", ended);
            } finally {
                copyQuietly(backend.serverLogFile(), output.resolve("kv-server.log"));
            }
        }
        run.setProperty("ended", Instant.now().toString());
        run.setProperty("load average at end", loadAverage());
        run.setProperty(
                "server heap",
                serverHeap == null ? "through the attach API" : "unreachable: " + serverHeap);

        // The final state first: the run's verdict on it goes into the report too.
        Map<Long, KeyFinalState> model = new HashMap<>();
        for (long key = 0; key < KEYS; key++) {
            model.put(key, ExpectedKeyState.of(schedule, key));
        }
        AssertionError finalStateWrong = null;
        try {
            // Throws with the job's failure cause unless it finished.
            Map<Long, KeyFinalState> finalStates = job.awaitFinalStates();
            FinalStates.assertSame(finalStates, model, "after the soak, against the model");
            run.setProperty(
                    "final state",
                    "exact: "
                            + finalStates.size()
                            + " of "
                            + KEYS
                            + " keys equal to the model, "
                            + schedule.totalRecords()
                            + " records");
        } catch (AssertionError e) {
            finalStateWrong = e;
            run.setProperty("final state", "WRONG or missing: " + firstLine(e));
        }

        List<SoakBounds.Check> checks = SoakBounds.check(curve, RETAINED_CHECKPOINTS);
        try (Writer out = Files.newBufferedWriter(output.resolve(SoakReport.RUN_PROPERTIES))) {
            run.store(out, "soak run");
        }
        SoakReport.write(curve, checks, run, output);
        checks.forEach(check -> System.out.println("soak: " + check.line()));
        System.out.println("soak: final state " + run.getProperty("final state"));

        String violations =
                checks.stream()
                        .filter(c -> !c.holds())
                        .map(c -> c.line() + "\n    " + c.curve())
                        .collect(Collectors.joining("\n"));
        if (finalStateWrong != null) {
            throw new AssertionError(
                    "soak job ended: "
                            + ended
                            + " (curves in "
                            + output.toAbsolutePath()
                            + ")"
                            + (violations.isEmpty() ? "" : "; also violated:\n" + violations),
                    finalStateWrong);
        }
        if (!violations.isEmpty()) {
            throw new AssertionError(
                    "soak bounds violated (curves in "
                            + output.toAbsolutePath()
                            + "):\n"
                            + violations);
        }
    }

    private static String firstLine(Throwable e) {
        String message = String.valueOf(e.getMessage());
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }

    /**
     * Samples until the job ends, returning its final status, or a description of why it was
     * stopped: past the deadline, or no progress for {@link #MAX_STALL}.
     */
    private static String runAndSample(
            MiniCluster cluster,
            RunningJob job,
            SoakSampler sampler,
            Duration sampleEvery,
            Duration deadline)
            throws Exception {
        long start = System.nanoTime();
        long lastProgress = start;
        long lastRecords = -1;
        long nextReport = start;
        while (true) {
            JobStatus status = cluster.getJobStatus(job.id()).get();
            if (status.isGloballyTerminalState()) {
                return status.name();
            }
            Map<String, Double> row = sampler.sample(true);
            long now = System.nanoTime();
            long records = job.recordsProcessed();
            if (records != lastRecords) {
                lastRecords = records;
                lastProgress = now;
            }
            if (now >= nextReport) {
                nextReport = now + Duration.ofMinutes(1).toNanos();
                System.out.println("soak: " + row);
            }
            if (now - lastProgress > MAX_STALL.toNanos() || now - start > deadline.toNanos()) {
                String why =
                        now - lastProgress > MAX_STALL.toNanos()
                                ? "no record processed for " + MAX_STALL
                                : "still running after " + deadline;
                cluster.cancelJob(job.id()).get();
                return why + " (cancelled; " + records + " records processed)";
            }
            Thread.sleep(sampleEvery.toMillis());
        }
    }

    private static Configuration soakConfig() {
        Configuration config = new Configuration();
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, CHECKPOINT_INTERVAL);
        config.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, RETAINED_CHECKPOINTS);
        return config;
    }

    private static String loadAverage() {
        try {
            String[] fields = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return fields[0] + " " + fields[1] + " " + fields[2];
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static void copyQuietly(Path from, Path to) {
        try {
            Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            System.out.println("soak: could not keep the kv-server log " + from + ": " + e);
        }
    }

    private static String fmt(double value) {
        return String.format(Locale.ROOT, value == Math.rint(value) ? "%.0f" : "%.2f", value);
    }
}
