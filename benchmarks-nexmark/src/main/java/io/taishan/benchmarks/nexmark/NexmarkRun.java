package io.taishan.benchmarks.nexmark;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.taishan.benchmarks.job.JobBackend;
import io.taishan.benchmarks.job.Machine;
import io.taishan.benchmarks.job.MetricsCapture;
import io.taishan.benchmarks.nexmark.table.HalfwayMark;
import io.taishan.benchmarks.nexmark.table.StartGate;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.configuration.WebOptions;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.CheckpointStatsStatus;
import org.apache.flink.runtime.checkpoint.FailedCheckpointStats;
import org.apache.flink.runtime.checkpoint.SubtaskStateStats;
import org.apache.flink.runtime.checkpoint.TaskStateStats;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.table.api.bridge.java.StreamStatementSet;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.util.FileUtils;
import org.apache.flink.util.TimeUtils;

/**
 * One run: one Nexmark query on one backend, a bounded job on a MiniCluster in this JVM, its
 * figures written to {@code --out} as JSON. {@code bin/taishan-nexmark} runs it once per query and
 * backend, each in a fresh JVM whose classpath carries that backend ({@link JobBackend.Provider}),
 * and then {@link NexmarkReport}.
 *
 * <p>What is measured, all on this JVM's wall clock:
 *
 * <ul>
 *   <li><b>start</b>: from the job's submission to the MiniCluster until every subtask is RUNNING
 *       (Flink's own state timestamps in the execution graph; RUNNING follows the restore, i.e. the
 *       creation of every keyed state backend);
 *   <li><b>events/s</b>: the events over the time from the first event made to the moment the last
 *       sink subtask had its whole input, i.e. every result out (final windows included). The
 *       source makes no event before this harness has seen every subtask RUNNING ({@link
 *       StartGate}), so start and processing do not overlap;
 *   <li><b>checkpoints</b>: every checkpoint in Flink's checkpoint statistics (the history is sized
 *       to keep them all): end-to-end durations, the longest subtask snapshot (synchronous plus
 *       asynchronous part: the backend's own cost) and the longest wait for barriers (start delay
 *       plus alignment: what back-pressure adds), and sizes;
 *   <li><b>CPU</b>: this process's CPU time (MiniCluster: JobManager, TaskManager, the source and
 *       the sink) over the job, and a kv-server child's from {@code /proc} when the backend has
 *       one;
 *   <li><b>result</b>: rows and the order-free digest of the final result ({@code ResultSink});
 *   <li><b>backend metrics</b>: the backends' own counters at the end ({@link MetricsCapture}),
 *       e.g. Taishan's calls to the kv-server by kind.
 *   <li><b>warm-up</b> ({@code --warm-up-events N}): before the measured job, the same query with N
 *       events on a MiniCluster of its own in this JVM, not measured, so that the measured job
 *       meets a JVM whose code is compiled, as the jobs of a long-running TaskManager do. Without
 *       it a 1,000,000-event run of q8, q11 or q19 spent 29–39% of this JVM's CPU in the JIT
 *       compiler on either backend (async-profiler).
 * </ul>
 *
 * <p>Every backend gets the same settings: parallelism 2 and max parallelism 128 unless told,
 * checkpoints every 3 s (exactly once, aligned, to a file system directory; incremental where the
 * backend has it), 512 MiB managed memory, no restarts, and nexmark's own table settings
 * (mini-batch of 2 s or 50,000 rows, distinct aggregates split).
 */
public final class NexmarkRun {
    /** Nexmark's {@code conf/config.yaml}: what its published runs use. */
    static final Map<String, String> NEXMARK_TABLE_CONFIG =
            Map.of(
                    "table.exec.mini-batch.enabled", "true",
                    "table.exec.mini-batch.allow-latency", "2s",
                    "table.exec.mini-batch.size", "50000",
                    "table.optimizer.distinct-agg.split.enabled", "true");

    static final long DEFAULT_BASE_TIME = Instant.parse("2025-01-01T00:00:00Z").toEpochMilli();

    private NexmarkRun() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new LinkedHashMap<>();
        opts.put("query", "q3");
        opts.put("backend", "HASHMAP");
        opts.put("events", "1000000");
        opts.put("event-rate", "1000");
        opts.put("seed", "0");
        opts.put("base-time", Long.toString(DEFAULT_BASE_TIME));
        opts.put("parallelism", "2");
        opts.put("max-parallelism", "128");
        opts.put("checkpoint-interval", "3s");
        opts.put("managed-memory", "512m");
        opts.put("mini-batch", "true");
        opts.put("dump-results", "");
        opts.put("out", "nexmark.json");
        opts.put("work", "");
        opts.put("warm-up-events", "0");
        for (int i = 0; i < args.length; i++) {
            String key = args[i].replaceFirst("^--", "");
            if (!opts.containsKey(key) || i + 1 >= args.length) {
                System.err.println(
                        "unknown or incomplete option " + args[i] + "; options: " + opts);
                System.exit(2);
            }
            opts.put(key, args[++i]);
        }
        NexmarkQuery query = NexmarkQuery.of(opts.get("query"));
        String backendName = opts.get("backend");
        Path work =
                opts.get("work").isEmpty()
                        ? Files.createTempDirectory("taishan-nexmark")
                        : Files.createDirectories(Path.of(opts.get("work")));
        Path out = Path.of(opts.get("out"));
        JsonObject result = new JsonObject();
        result.addProperty("query", query.id());
        result.addProperty("title", query.title());
        result.addProperty("backend", backendName);
        result.addProperty("flinkVersion", EnvironmentInformation.getVersion());
        opts.forEach((k, v) -> result.addProperty("option." + k, v));
        int status = 0;
        try (JobBackend backend =
                JobBackend.Provider.forBackend(backendName)
                        .open(backendName, work, Map.of(), false)) {
            result.addProperty("description", backend.description());
            long warmUpEvents = Long.parseLong(opts.get("warm-up-events"));
            if (warmUpEvents > 0) {
                // Its figures are not reported: only that it ran, and how long it took.
                JsonObject warmUp = new JsonObject();
                warmUp.addProperty("backend", backendName);
                long startNanos = System.nanoTime();
                run(query, backend, opts, work.resolve("warm-up"), warmUpEvents, false, warmUp);
                result.addProperty("warmUpSeconds", (System.nanoTime() - startNanos) / 1e9);
            }
            run(query, backend, opts, work, Long.parseLong(opts.get("events")), true, result);
        } catch (Exception e) {
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            result.addProperty("error", e + (root == e ? "" : ", caused by " + root));
            e.printStackTrace();
            status = 1;
        }
        result.addProperty("jvmMaxHeapBytes", Runtime.getRuntime().maxMemory());
        result.addProperty("cores", Runtime.getRuntime().availableProcessors());
        Files.writeString(out, new GsonBuilder().setPrettyPrinting().create().toJson(result));
        if (opts.get("work").isEmpty()) {
            FileUtils.deleteDirectoryQuietly(work.toFile());
        }
        System.out.println(summary(result));
        // Flink and gRPC leave non-daemon threads behind; the result is written.
        System.exit(status);
    }

    /**
     * One job of {@code events} on its own MiniCluster. Only the {@code measured} one waits at the
     * {@link StartGate} (a one-shot latch) and dumps its rows; a warm-up job before it starts at
     * once.
     */
    private static void run(
            NexmarkQuery query,
            JobBackend backend,
            Map<String, String> opts,
            Path work,
            long events,
            boolean measured,
            JsonObject result)
            throws Exception {
        int parallelism = Integer.parseInt(opts.get("parallelism"));
        double rate = Double.parseDouble(opts.get("event-rate"));
        Configuration config = configuration(opts, work);
        config.addAll(backend.configuration());

        Map<String, String> datagen = new LinkedHashMap<>();
        datagen.put("events.num", Long.toString(events));
        datagen.put("first-event.rate", opts.get("event-rate"));
        datagen.put("seed", opts.get("seed"));
        datagen.put("base-time", opts.get("base-time"));
        datagen.put("start-gate", Boolean.toString(measured));
        Path dump =
                measured && Boolean.parseBoolean(opts.get("dump-results"))
                        ? work.resolve("dump")
                        : null;
        List<String> statements = query.statements(datagen, dump == null ? null : dump.toString());

        StreamExecutionEnvironment env = new StreamExecutionEnvironment(config);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        for (String s : statements.subList(0, statements.size() - 1)) {
            tEnv.executeSql(s);
        }
        String insert = statements.get(statements.size() - 1);
        Path plan = Path.of(opts.get("out") + ".plan.txt");
        if (measured) {
            Files.writeString(plan, tEnv.explainSql(insert));
        }
        StreamStatementSet set = tEnv.createStatementSet();
        set.addInsertSql(insert);
        set.attachAsDataStream();
        StreamGraph graph = env.getStreamGraph();
        graph.setJobName("nexmark " + query.id() + " on " + result.get("backend").getAsString());
        JobGraph jobGraph = graph.getJobGraph();

        String orderDependence = query.orderDependence(rate);
        result.addProperty("comparable", orderDependence == null);
        if (orderDependence != null) {
            result.addProperty("orderDependence", orderDependence);
        }
        result.addProperty("events", events);
        result.addProperty("plan", plan.getFileName().toString());

        MiniClusterConfiguration cluster =
                new MiniClusterConfiguration.Builder()
                        .setConfiguration(config)
                        .setNumTaskManagers(1)
                        .setNumSlotsPerTaskManager(parallelism)
                        .build();
        try (MiniCluster miniCluster = new MiniCluster(cluster)) {
            miniCluster.start();
            result.addProperty("loadAverageStart", Machine.loadAverage());
            MetricsCapture.clear();
            long serverCpuStart = serverCpuNanos(backend);
            long cpuStart = Machine.processCpuNanos();
            HalfwayMark.arm(events, Machine::processCpuNanos, () -> serverCpuNanos(backend));
            long submitted = System.currentTimeMillis();
            JobID jobId = miniCluster.submitJob(jobGraph).get().getJobID();
            awaitAllRunning(miniCluster, jobId);
            if (measured) {
                StartGate.open();
            }
            JobResult jobResult = miniCluster.requestJobResult(jobId).get();
            long ended = System.currentTimeMillis();
            long cpu = Machine.processCpuNanos() - cpuStart;
            long serverCpuEnd = serverCpuNanos(backend);
            result.addProperty("loadAverageEnd", Machine.loadAverage());
            AccessExecutionGraph executed = miniCluster.getExecutionGraph(jobId).get();
            result.addProperty("jobStatus", executed.getState().name());
            // Also for a failed job: a failing checkpoint is often why.
            result.add("checkpoints", checkpoints(executed.getCheckpointStatsSnapshot()));
            if (!jobResult.isSuccess()) {
                throw new IllegalStateException(
                        "the job failed",
                        jobResult
                                .getSerializedThrowable()
                                .map(t -> t.deserializeError(NexmarkRun.class.getClassLoader()))
                                .orElse(null));
            }
            JobExecutionResult execution =
                    jobResult.toJobExecutionResult(NexmarkRun.class.getClassLoader());
            timings(executed, execution, submitted, ended, events, result);
            result.addProperty("processCpuSeconds", cpu / 1e9);
            if (serverCpuStart >= 0 && serverCpuEnd >= 0) {
                result.addProperty("kvServerCpuSeconds", (serverCpuEnd - serverCpuStart) / 1e9);
            }
            secondHalf(execution, events, cpuStart + cpu, serverCpuEnd, result);
            resultFigures(execution, result);
            JsonObject metrics = new JsonObject();
            MetricsCapture.snapshot().forEach(metrics::addProperty);
            result.add("backendMetrics", metrics);
            if (dump != null) {
                result.addProperty("dump", mergeDump(dump, Path.of(opts.get("out") + ".rows.txt")));
            }
        }
    }

    /** Until every subtask is RUNNING, or the job ended without (its result says why). */
    private static void awaitAllRunning(MiniCluster miniCluster, JobID jobId) throws Exception {
        while (true) {
            AccessExecutionGraph graph = miniCluster.getExecutionGraph(jobId).get();
            if (graph.getState().isGloballyTerminalState()) {
                return;
            }
            boolean all = true;
            for (AccessExecutionVertex v : graph.getAllExecutionVertices()) {
                all &= v.getExecutionState() == ExecutionState.RUNNING;
            }
            if (all) {
                return;
            }
            Thread.sleep(10);
        }
    }

    static Configuration configuration(Map<String, String> opts, Path work) {
        Configuration config = new Configuration();
        int parallelism = Integer.parseInt(opts.get("parallelism"));
        config.set(CoreOptions.DEFAULT_PARALLELISM, parallelism);
        config.set(PipelineOptions.MAX_PARALLELISM, Integer.parseInt(opts.get("max-parallelism")));
        config.set(TaskManagerOptions.NUM_TASK_SLOTS, parallelism);
        config.set(
                TaskManagerOptions.MANAGED_MEMORY_SIZE,
                MemorySize.parse(opts.get("managed-memory")));
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        config.set(RestOptions.BIND_PORT, "0");
        Duration interval = TimeUtils.parseDuration(opts.get("checkpoint-interval"));
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, interval);
        config.set(
                CheckpointingOptions.CHECKPOINTS_DIRECTORY,
                work.resolve("checkpoints").toUri().toString());
        config.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
        // Flink's default, which nexmark turns off for its endless sources: here the source ends
        // first, often long before the keyed operators, whose checkpoints are what is measured.
        config.set(CheckpointingOptions.ENABLE_CHECKPOINTS_AFTER_TASKS_FINISH, true);
        // Every checkpoint of the run stays in the statistics (Flink keeps 10 by default).
        config.set(WebOptions.CHECKPOINTS_HISTORY_SIZE, 1_000_000);
        // The backends' own metrics (Taishan's RPCs by kind), read after the job.
        MetricsCapture.configure(config);
        if (Boolean.parseBoolean(opts.get("mini-batch"))) {
            NEXMARK_TABLE_CONFIG.forEach(config::setString);
        }
        return config;
    }

    private static void timings(
            AccessExecutionGraph executed,
            JobExecutionResult execution,
            long submitted,
            long ended,
            long events,
            JsonObject result) {
        long allRunning = 0;
        long allDeployed = 0;
        JsonObject vertices = new JsonObject();
        for (AccessExecutionJobVertex vertex : executed.getVerticesTopologically()) {
            long vertexRunning = 0;
            for (AccessExecutionVertex subtask : vertex.getTaskVertices()) {
                long running = subtask.getStateTimestamp(ExecutionState.RUNNING);
                vertexRunning = Math.max(vertexRunning, running);
                allDeployed =
                        Math.max(allDeployed, subtask.getStateTimestamp(ExecutionState.DEPLOYING));
            }
            allRunning = Math.max(allRunning, vertexRunning);
            vertices.addProperty(vertex.getName(), (vertexRunning - submitted) / 1000.0);
        }
        long firstEvent = execution.getAccumulatorResult(NexmarkAccumulators.FIRST_EVENT_MILLIS);
        long sinkFinished =
                execution.getAccumulatorResult(NexmarkAccumulators.SINK_FINISHED_MILLIS);
        long made =
                ((Number) execution.getAccumulatorResult(NexmarkAccumulators.EVENTS)).longValue();
        if (made != events) {
            throw new IllegalStateException("the source made " + made + " events, not " + events);
        }
        result.addProperty("submittedMillis", submitted);
        result.addProperty("jobCreatedMillis", executed.getStatusTimestamp(JobStatus.CREATED));
        result.addProperty("allDeployingSeconds", (allDeployed - submitted) / 1000.0);
        result.addProperty("startSeconds", (allRunning - submitted) / 1000.0);
        result.add("vertexRunningSeconds", vertices);
        result.addProperty("firstEventSeconds", (firstEvent - submitted) / 1000.0);
        result.addProperty("lastResultSeconds", (sinkFinished - submitted) / 1000.0);
        result.addProperty("jobSeconds", (ended - submitted) / 1000.0);
        double processing = (sinkFinished - firstEvent) / 1000.0;
        result.addProperty("processingSeconds", processing);
        result.addProperty("eventsPerSecond", events / processing);
    }

    /**
     * Throughput and CPU per event from the moment the source had made half the events ({@link
     * HalfwayMark}) to the last sink subtask's end of input, after most of the JVMs' warm-up.
     */
    private static void secondHalf(
            JobExecutionResult execution,
            long events,
            long jobCpuEnd,
            long serverCpuEnd,
            JsonObject result) {
        HalfwayMark.Mark mark = HalfwayMark.mark();
        if (mark == null) {
            return;
        }
        long sinkFinished =
                execution.getAccumulatorResult(NexmarkAccumulators.SINK_FINISHED_MILLIS);
        long after = events - mark.events();
        JsonObject half = new JsonObject();
        half.addProperty("events", after);
        half.addProperty("seconds", (sinkFinished - mark.millis()) / 1000.0);
        half.addProperty("eventsPerSecond", after * 1000.0 / (sinkFinished - mark.millis()));
        half.addProperty("jobCpuMicrosPerEvent", (jobCpuEnd - mark.jobCpuNanos()) / 1e3 / after);
        if (mark.serverCpuNanos() >= 0 && serverCpuEnd >= 0) {
            half.addProperty(
                    "kvServerCpuMicrosPerEvent",
                    (serverCpuEnd - mark.serverCpuNanos()) / 1e3 / after);
        }
        result.add("secondHalf", half);
    }

    private static JsonObject checkpoints(CheckpointStatsSnapshot stats) {
        List<Long> durations = new ArrayList<>();
        List<Long> snapshots = new ArrayList<>();
        JsonArray each = new JsonArray();
        int failed = 0;
        int declinedFinishing = 0;
        JsonArray failures = new JsonArray();
        for (AbstractCheckpointStats c : stats.getHistory().getCheckpoints()) {
            if (c instanceof FailedCheckpointStats f) {
                String message = String.valueOf(f.getFailureMessage());
                // A task at its end of input declines the barriers that reach it while it closes,
                // and a trigger that reaches a task just gone finds it unknown: the job is ending,
                // nothing went wrong.
                if (message.contains("task is closing")
                        || message.contains("checkpoint request for unknown task")) {
                    declinedFinishing++;
                } else {
                    failed++;
                    failures.add(c.getCheckpointId() + ": " + message);
                }
            }
            if (c.getStatus() != CheckpointStatsStatus.COMPLETED) {
                continue;
            }
            durations.add(c.getEndToEndDuration());
            long snapshot = 0;
            long barrierWait = 0;
            for (TaskStateStats task : c.getAllTaskStateStats()) {
                for (SubtaskStateStats subtask : task.getSubtaskStats()) {
                    if (subtask != null) {
                        snapshot =
                                Math.max(
                                        snapshot,
                                        subtask.getSyncCheckpointDuration()
                                                + subtask.getAsyncCheckpointDuration());
                        barrierWait =
                                Math.max(
                                        barrierWait,
                                        subtask.getCheckpointStartDelay()
                                                + subtask.getAlignmentDuration());
                    }
                }
            }
            snapshots.add(snapshot);
            JsonObject j = new JsonObject();
            j.addProperty("id", c.getCheckpointId());
            j.addProperty("triggerMillis", c.getTriggerTimestamp());
            j.addProperty("durationMillis", c.getEndToEndDuration());
            j.addProperty("snapshotMillis", snapshot);
            j.addProperty("barrierWaitMillis", barrierWait);
            j.addProperty("stateSizeBytes", c.getStateSize());
            j.addProperty("checkpointedSizeBytes", c.getCheckpointedSize());
            each.add(j);
        }
        durations.sort(null);
        snapshots.sort(null);
        JsonObject out = new JsonObject();
        out.addProperty("completed", durations.size());
        out.addProperty("failed", failed);
        out.addProperty("declinedByFinishingTasks", declinedFinishing);
        out.add("failures", failures);
        if (!durations.isEmpty()) {
            out.addProperty("medianMillis", median(durations));
            out.addProperty("maxMillis", durations.get(durations.size() - 1));
            out.addProperty("medianSnapshotMillis", median(snapshots));
            out.addProperty("maxSnapshotMillis", snapshots.get(snapshots.size() - 1));
        }
        out.add("each", each);
        return out;
    }

    static double median(List<Long> sorted) {
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2.0;
    }

    private static void resultFigures(JobExecutionResult execution, JsonObject result) {
        long rows = execution.getAccumulatorResult(NexmarkAccumulators.ROWS);
        long changes = execution.getAccumulatorResult(NexmarkAccumulators.CHANGES);
        long high = execution.getAccumulatorResult(NexmarkAccumulators.DIGEST_HIGH);
        long low = execution.getAccumulatorResult(NexmarkAccumulators.DIGEST_LOW);
        result.addProperty("resultRows", rows);
        result.addProperty("resultChanges", changes);
        result.addProperty("resultDigest", String.format("%016x%016x", high, low));
    }

    /** The parts' net counts summed, each row written as often as it remains, sorted. */
    private static String mergeDump(Path dir, Path file) throws IOException {
        Map<String, Long> counts = new TreeMap<>();
        try (Stream<Path> parts = Files.list(dir)) {
            for (Path part : parts.toList()) {
                for (String line : Files.readAllLines(part)) {
                    int tab = line.indexOf('\t');
                    counts.merge(
                            line.substring(tab + 1),
                            Long.parseLong(line.substring(0, tab)),
                            Long::sum);
                }
            }
        }
        List<String> lines = new ArrayList<>();
        counts.forEach(
                (row, count) -> {
                    for (long i = 0; i < count; i++) {
                        lines.add(row);
                    }
                    if (count < 0) {
                        lines.add("RETRACTED BUT NEVER ADDED x" + -count + ": " + row);
                    }
                });
        Files.write(file, lines);
        return file.getFileName().toString();
    }

    /** A kv-server child's CPU so far, from /proc through ProcessHandle; -1 without one. */
    private static long serverCpuNanos(JobBackend backend) {
        long pid = backend.serverPid();
        if (pid < 0) {
            return -1;
        }
        return ProcessHandle.of(pid)
                .flatMap(p -> p.info().totalCpuDuration())
                .map(Duration::toNanos)
                .orElse(-1L);
    }

    private static String summary(JsonObject r) {
        if (r.has("error")) {
            return String.format(
                    "%s %s: FAILED %s",
                    r.get("query").getAsString(),
                    r.get("backend").getAsString(),
                    r.get("error").getAsString());
        }
        return String.format(
                "%s %s: %,.0f events/s, start %.2f s, %d checkpoints (median %s ms), %,d rows,"
                        + " digest %s; load average %s -> %s",
                r.get("query").getAsString(),
                r.get("backend").getAsString(),
                r.get("eventsPerSecond").getAsDouble(),
                r.get("startSeconds").getAsDouble(),
                r.getAsJsonObject("checkpoints").get("completed").getAsInt(),
                r.getAsJsonObject("checkpoints").has("medianMillis")
                        ? r.getAsJsonObject("checkpoints").get("medianMillis").getAsString()
                        : "-",
                r.get("resultRows").getAsLong(),
                r.get("resultDigest").getAsString().substring(0, 12),
                r.get("loadAverageStart").getAsString(),
                r.get("loadAverageEnd").getAsString());
    }
}
