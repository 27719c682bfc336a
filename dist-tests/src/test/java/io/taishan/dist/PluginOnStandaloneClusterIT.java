package io.taishan.dist;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.dist.FlinkRest.JobStatus;
import io.taishan.dist.job.KeyStateFunction;
import io.taishan.dist.job.Schedule;
import io.taishan.kv.testing.KvServerProcess;
import java.io.IOException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The plugin jar on a real multi-process Flink 1.20 standalone cluster, installed as a user
 * installs it: copied into {@code lib/}, the backend chosen in {@code config.yaml} by {@code
 * state.backend.type: io.taishan.backend.TaishanStateBackendFactory} and {@code
 * taishan.kv.address}. Nothing of Taishan is on the cluster's class path but that jar; the
 * kv-server runs from its own jar and {@code lib/} in a JVM of its own.
 *
 * <p>A JobManager and two TaskManagers (one slot each, so the keyed exchange crosses processes);
 * the job, submitted with {@code flink run -d}, counts 64 keys × 100 records at parallelism 2,
 * checkpointing every second, paced so the test has time for what follows: once two checkpoints
 * have completed, one TaskManager is killed with SIGKILL and a new one started; the job must
 * restore a checkpoint and checkpoint again. Then the kv-server is killed with SIGKILL and
 * restarted on the same port and data dir: its leases are fenced after an unclean stop, so the job
 * must fail over again and restore. Then the pace is released and the job runs to its end. Every
 * key's final state (count, sum, histogram, every value) must equal the model computed from the
 * schedule, and every keyed subtask must have run on {@code TaishanKeyedStateBackend} loaded from
 * the plugin jar in {@code lib/}.
 */
class PluginOnStandaloneClusterIT {
    private static final String FACTORY = "io.taishan.backend.TaishanStateBackendFactory";
    private static final String KEYED_BACKEND = "io.taishan.backend.TaishanKeyedStateBackend";

    private static final Schedule SCHEDULE = new Schedule(64, 100);
    private static final int PARALLELISM = 2;

    /**
     * Slow enough that the input (6,400 records, 2 subtasks: 640 s) outlasts every wait below put
     * together; the release then lets the rest through at full speed.
     */
    private static final double RECORDS_PER_SECOND_PER_SUBTASK = 5;

    private static final Duration CLUSTER_START = Duration.ofSeconds(90);
    private static final Duration FIRST_CHECKPOINTS = Duration.ofSeconds(120);
    private static final Duration RECOVERY = Duration.ofSeconds(120);
    private static final Duration TO_THE_END = Duration.ofSeconds(120);
    private static final Duration POLL = Duration.ofMillis(250);

    @Test
    @Timeout(600)
    void jobOnThePluginJarSurvivesATaskManagerAndAKvServerKilledWithExactState(
            @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path work) throws Exception {
        Path pluginJar = existing("taishan.plugin.jar");
        Path jobJar = existing("taishan.job.jar");
        List<Path> distribution = flinkDistribution();
        Path dataDir = work.resolve("kv-data");
        Path out = work.resolve("out");
        Path release = work.resolve("release");
        long started = System.nanoTime();

        KvServerProcess kv = KvServerProcess.start(dataDir);
        StandaloneFlinkCluster cluster = null;
        try {
            cluster =
                    StandaloneFlinkCluster.install(
                            work.resolve("flink"),
                            distribution,
                            List.of(pluginJar),
                            clusterConfig(kv.address(), work.resolve("checkpoints")));
            FlinkRest rest = cluster.rest();
            ChildProcess jobManager = cluster.startJobManager();
            ChildProcess firstTaskManager = cluster.startTaskManager("taskmanager-1");
            cluster.startTaskManager("taskmanager-2");
            awaitTaskManagers(cluster, rest, jobManager, 2);
            phase("cluster up (JobManager, 2 TaskManagers)", started);

            String jobId =
                    cluster.submitDetached(
                            jobJar,
                            "--keys",
                            Integer.toString(SCHEDULE.keys()),
                            "--records-per-key",
                            Integer.toString(SCHEDULE.recordsPerKey()),
                            "--out",
                            out.toString(),
                            "--records-per-second-per-subtask",
                            Double.toString(RECORDS_PER_SECOND_PER_SUBTASK),
                            "--release-file",
                            release.toString());
            phase("job " + jobId + " submitted through CliFrontend", started);
            JobStatus checkpointed =
                    await(
                            cluster,
                            rest,
                            jobId,
                            s -> "RUNNING".equals(s.state()) && s.completedCheckpoints() >= 2,
                            FIRST_CHECKPOINTS,
                            "two completed checkpoints");
            phase("2 checkpoints completed", started);

            firstTaskManager.kill();
            cluster.startTaskManager("taskmanager-3");
            JobStatus afterTaskManager = awaitRecovery(cluster, rest, jobId, checkpointed);
            phase(
                    "TaskManager killed (SIGKILL), a new one started, checkpoint "
                            + afterTaskManager.latestRestoredId()
                            + " restored and checkpointed again",
                    started);

            int failuresBefore = rest.exceptions(jobId).size();
            int port = kv.port();
            kv.kill();
            kv = KvServerProcess.start(dataDir, "--port", Integer.toString(port));
            JobStatus afterKvServer = awaitRecovery(cluster, rest, jobId, afterTaskManager);
            phase(
                    "kv-server killed (SIGKILL) and restarted on port "
                            + port
                            + ", checkpoint "
                            + afterKvServer.latestRestoredId()
                            + " restored and checkpointed again",
                    started);
            List<String> causes = rest.exceptions(jobId);
            System.out.println("failover causes, newest first:");
            causes.forEach(c -> System.out.println("  " + c));
            assertThat(causes.size())
                    .as("failures in the job's exception history after the kv-server crash")
                    .isGreaterThan(failuresBefore);

            Files.createFile(release);
            JobStatus finished =
                    await(
                            cluster,
                            rest,
                            jobId,
                            s -> s.state().equals("FINISHED"),
                            TO_THE_END,
                            "the end");
            phase("job finished", started);

            assertThat(finished.restoredCheckpoints())
                    .as("checkpoint restores: one per failover at least")
                    .isGreaterThanOrEqualTo(2);
            assertFinalStatesExact(out.resolve("final"));
            assertEveryKeyedSubtaskRanOnTheBackendFromThePluginJar(
                    out.resolve("opened"),
                    cluster.home().resolve("lib").resolve(pluginJar.getFileName()));
        } finally {
            if (cluster != null) {
                cluster.close();
            }
            kv.kill();
        }
    }

    private static Map<String, String> clusterConfig(String kvAddress, Path checkpoints) {
        Map<String, String> config = new LinkedHashMap<>();
        // Flink's own config.yaml sets this list for Java 17.
        config.put("env.java.opts.all", System.getProperty("flink.java.opts", "").trim());
        config.put("jobmanager.memory.process.size", "1024m");
        config.put("taskmanager.memory.process.size", "1280m");
        config.put("taskmanager.memory.managed.size", "128m");
        config.put("taskmanager.numberOfTaskSlots", "1");
        config.put("parallelism.default", Integer.toString(PARALLELISM));
        config.put("pipeline.max-parallelism", "32");
        config.put("execution.checkpointing.interval", "1 s");
        config.put("state.checkpoints.dir", checkpoints.toUri().toString());
        config.put("state.backend.type", FACTORY);
        config.put("taishan.kv.address", kvAddress);
        config.put("restart-strategy.type", "fixed-delay");
        config.put("restart-strategy.fixed-delay.attempts", "100");
        config.put("restart-strategy.fixed-delay.delay", "1 s");
        // A killed TaskManager is given up after seconds, not Flink's default 50 s.
        config.put("heartbeat.interval", "1000");
        config.put("heartbeat.timeout", "5000");
        // Every failure kept, so that the test sees the ones after the kv-server crash.
        config.put("web.exception-history-size", "100");
        return config;
    }

    /**
     * Waits until the job has restored a checkpoint once more than at {@code previous}, runs on
     * every subtask, and has completed a checkpoint since that restore.
     */
    private static JobStatus awaitRecovery(
            StandaloneFlinkCluster cluster, FlinkRest rest, String jobId, JobStatus previous)
            throws Exception {
        return await(
                cluster,
                rest,
                jobId,
                s ->
                        s.restoredCheckpoints() > previous.restoredCheckpoints()
                                && s.runningAndCheckpointedSinceRestore(),
                RECOVERY,
                "a restore after " + previous + ", then a checkpoint");
    }

    private static JobStatus await(
            StandaloneFlinkCluster cluster,
            FlinkRest rest,
            String jobId,
            Predicate<JobStatus> condition,
            Duration timeout,
            String what)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        JobStatus status = null;
        while (System.nanoTime() < deadline) {
            status = rest.job(jobId);
            if (condition.test(status)) {
                return status;
            }
            if (status.isGloballyTerminal()) {
                break;
            }
            Thread.sleep(POLL.toMillis());
        }
        throw new AssertionError(
                "waited "
                        + timeout
                        + " for "
                        + what
                        + "; last "
                        + status
                        + "\nexceptions: "
                        + rest.exceptions(jobId)
                        + "\n"
                        + cluster.logTail("standalonesession", 40));
    }

    private static void awaitTaskManagers(
            StandaloneFlinkCluster cluster, FlinkRest rest, ChildProcess jobManager, int count)
            throws Exception {
        long deadline = System.nanoTime() + CLUSTER_START.toNanos();
        while (System.nanoTime() < deadline) {
            if (!jobManager.isAlive()) {
                throw new AssertionError("the JobManager exited:\n" + jobManager.tail(40));
            }
            try {
                if (rest.taskManagers() >= count) {
                    return;
                }
            } catch (IOException notYetListening) {
                // the REST endpoint is not up yet
            }
            Thread.sleep(POLL.toMillis());
        }
        throw new AssertionError(
                "no "
                        + count
                        + " TaskManagers registered within "
                        + CLUSTER_START
                        + "\n"
                        + cluster.logTail("standalonesession", 40)
                        + "\n"
                        + cluster.logTail("taskmanager-1", 40));
    }

    private static void assertFinalStatesExact(Path finalDir) throws IOException {
        Map<Long, String> actual = new TreeMap<>();
        try (Stream<Path> files = Files.list(finalDir)) {
            for (Path file :
                    files.filter(f -> f.getFileName().toString().startsWith("key-")).toList()) {
                long key = Long.parseLong(file.getFileName().toString().substring("key-".length()));
                actual.put(key, Files.readString(file, StandardCharsets.UTF_8).trim());
            }
        }
        Map<Long, String> expected = new TreeMap<>();
        for (long key = 0; key < SCHEDULE.keys(); key++) {
            expected.put(key, expectedFinalState(key));
        }
        assertThat(actual.keySet()).as("keys with a final state").isEqualTo(expected.keySet());
        List<Long> wrong = new ArrayList<>();
        for (long key : expected.keySet()) {
            if (!expected.get(key).equals(actual.get(key))) {
                wrong.add(key);
            }
        }
        assertThat(wrong)
                .as(
                        "keys whose final state differs from the model, e.g. key %s:%n  expected %s%n  actual   %s",
                        wrong.isEmpty() ? "-" : wrong.get(0),
                        wrong.isEmpty() ? "-" : expected.get(wrong.get(0)),
                        wrong.isEmpty() ? "-" : actual.get(wrong.get(0)))
                .isEmpty();
    }

    /** The model: record {@code i} goes to key {@code i % keys} with {@link Schedule#value}. */
    private static String expectedFinalState(long key) {
        long count = 0;
        long sum = 0;
        Map<Long, Long> histogram = new TreeMap<>();
        List<Long> values = new ArrayList<>();
        for (long index = key; index < SCHEDULE.records(); index += SCHEDULE.keys()) {
            long value = Schedule.value(index);
            count++;
            sum += value;
            histogram.merge(value % KeyStateFunction.HISTOGRAM_BUCKETS, 1L, Long::sum);
            values.add(value);
        }
        values.sort(null);
        return KeyStateFunction.format(key, count, sum, histogram, values);
    }

    private static void assertEveryKeyedSubtaskRanOnTheBackendFromThePluginJar(
            Path openedDir, Path installedPluginJar) throws Exception {
        Path expectedJar = installedPluginJar.toRealPath();
        List<String> opened = new ArrayList<>();
        int maxAttempt = 0;
        try (Stream<Path> files = Files.list(openedDir)) {
            for (Path file : files.toList()) {
                String name = file.getFileName().toString();
                maxAttempt =
                        Math.max(
                                maxAttempt,
                                Integer.parseInt(name.substring(name.lastIndexOf('-') + 1)));
                String[] backendAndJar =
                        Files.readString(file, StandardCharsets.UTF_8).trim().split(" ", 2);
                assertThat(backendAndJar[0])
                        .as("keyed backend of " + name)
                        .isEqualTo(KEYED_BACKEND);
                assertThat(Path.of(new URL(backendAndJar[1]).toURI()).toRealPath())
                        .as("the jar " + name + "'s keyed backend came from")
                        .isEqualTo(expectedJar);
                opened.add(name);
            }
        }
        // Two subtasks, each opened once per attempt: at least 0, 1 and 2.
        assertThat(opened).as("keyed subtasks opened").hasSizeGreaterThanOrEqualTo(3 * PARALLELISM);
        assertThat(maxAttempt)
                .as("the latest attempt of a keyed subtask")
                .isGreaterThanOrEqualTo(2);
    }

    /** The Flink artifacts standing in for flink-dist; none of Taishan, no RocksDB of any kind. */
    private static List<Path> flinkDistribution() throws IOException {
        String classpath = Files.readString(existing("flink.classpath.file")).trim();
        List<Path> jars = new ArrayList<>();
        for (String entry : classpath.split(":")) {
            jars.add(Path.of(entry));
        }
        assertThat(jars)
                .as("the cluster's class path apart from the plugin jar")
                .noneMatch(p -> p.getFileName().toString().contains("taishan"))
                .noneMatch(p -> p.getFileName().toString().contains("rocksdb"))
                .anyMatch(p -> p.getFileName().toString().startsWith("flink-runtime-"));
        return jars;
    }

    private static Path existing(String property) {
        String value = System.getProperty(property);
        assertThat(value).as("-D" + property + " (set by the pom)").isNotBlank();
        Path path = Path.of(value);
        assertThat(path)
                .as(property + ": build it with mvn package -pl dist-tests -am")
                .isRegularFile();
        return path;
    }

    private static void phase(String what, long startedNanos) {
        System.out.printf("%6.1f s  %s%n", (System.nanoTime() - startedNanos) / 1e9, what);
    }
}
