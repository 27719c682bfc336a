package io.taishan.benchmarks.job;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.util.FileUtils;
import org.apache.flink.util.TimeUtils;

/**
 * One run of one issue 8 benchmark on one backend, in this JVM (a MiniCluster at parallelism 1):
 * {@code --bench cleanup} ({@link CleanupTimerJob}) or {@code --bench sql} ({@link SqlTtlJob}); the
 * result, with the machine's load average at both ends, goes to {@code --out} as JSON. {@code
 * bin/taishan-idle-bench} runs it once per backend and round, each in a fresh JVM, alternating the
 * sides, and renders the report ({@code io.taishan.benchmarks.report.IdleStateReport}).
 *
 * <p>Every backend gets the same Flink settings: 128 key groups, 256 MiB managed memory (RocksDB's
 * block cache and write buffers, Taishan's read cache: enough for each benchmark's state), no
 * checkpoints, object reuse.
 */
public final class IdleStateBench {
    static final int MAX_PARALLELISM = 128;
    static final MemorySize MANAGED_MEMORY = MemorySize.parse("256m");

    private IdleStateBench() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new LinkedHashMap<>();
        opts.put("bench", "cleanup");
        opts.put("backend", HashMapJobBackend.HASHMAP);
        opts.put("keys", "1000000");
        opts.put("records", "2000000");
        opts.put("access", "UNIFORM");
        opts.put("active-keys", "10000");
        opts.put("ttl", "10s");
        opts.put("quiet-rate", "5000");
        opts.put("quiet-for", "30s");
        opts.put("sweep-interval", "1s");
        opts.put("clock-report-interval", "1s");
        opts.put("store-samples", "");
        opts.put("out", "idle-state.json");
        opts.put("work", "");
        for (int i = 0; i < args.length; i++) {
            String key = args[i].replaceFirst("^--", "");
            if (!opts.containsKey(key) || i + 1 >= args.length) {
                System.err.println(
                        "unknown or incomplete option " + args[i] + "; options: " + opts);
                System.exit(2);
            }
            opts.put(key, args[++i]);
        }
        Path work =
                opts.get("work").isEmpty()
                        ? Files.createTempDirectory("taishan-idle-bench")
                        : Files.createDirectories(Path.of(opts.get("work")));
        Map<String, String> serverConfig = new LinkedHashMap<>();
        serverConfig.put("ttl.sweep-interval", opts.get("sweep-interval"));
        String backendName = opts.get("backend");
        // The SQL run charts the store; the cleanup run's throughput must not pay for a count.
        boolean sampleStore =
                opts.get("store-samples").isEmpty()
                        ? opts.get("bench").equals("sql")
                        : Boolean.parseBoolean(opts.get("store-samples"));
        JsonObject result;
        try (JobBackend backend =
                JobBackend.Provider.forBackend(backendName)
                        .open(backendName, work, serverConfig, sampleStore)) {
            Configuration config = jobConfiguration(backend);
            config.setString(
                    "taishan.ttl.clock-report-interval", opts.get("clock-report-interval"));
            MetricsCapture.clear();
            result =
                    switch (opts.get("bench")) {
                        case "cleanup" ->
                                CleanupTimerJob.run(
                                        backend,
                                        config,
                                        Integer.parseInt(opts.get("keys")),
                                        Long.parseLong(opts.get("records")),
                                        Phase.Access.valueOf(opts.get("access")));
                        case "sql" ->
                                SqlTtlJob.run(
                                        backend,
                                        config,
                                        Integer.parseInt(opts.get("keys")),
                                        Integer.parseInt(opts.get("active-keys")),
                                        TimeUtils.parseDuration(opts.get("ttl")),
                                        Double.parseDouble(opts.get("quiet-rate")),
                                        TimeUtils.parseDuration(opts.get("quiet-for")));
                        default ->
                                throw new IllegalArgumentException(
                                        "--bench cleanup|sql, not " + opts.get("bench"));
                    };
            result.addProperty("bench", opts.get("bench"));
            result.addProperty("backend", backendName);
            result.addProperty("description", backend.description());
            result.addProperty("sweepInterval", opts.get("sweep-interval"));
            result.addProperty("storeSampled", sampleStore);
            JsonArray store = new JsonArray();
            for (JobBackend.StoreSample s : backend.storeSamples()) {
                JsonObject j = new JsonObject();
                j.addProperty("epochMillis", s.epochMillis());
                j.addProperty("liveEntries", s.liveEntries());
                j.addProperty("liveBytes", s.liveBytes());
                j.addProperty("expiredEntries", s.expiredEntries());
                j.addProperty("lastSweepMillis", s.lastSweepMillis());
                j.addProperty("processCpuNanos", s.processCpuNanos());
                j.addProperty("expiryCpuNanos", s.expiryCpuNanos());
                j.addProperty("samplerCpuNanos", s.samplerCpuNanos());
                store.add(j);
            }
            result.add("storeSamples", store);
        }
        result.addProperty("jvmMaxHeapBytes", Runtime.getRuntime().maxMemory());
        result.addProperty("cores", Runtime.getRuntime().availableProcessors());
        Files.writeString(
                Path.of(opts.get("out")),
                new GsonBuilder().setPrettyPrinting().create().toJson(result));
        if (opts.get("work").isEmpty()) {
            FileUtils.deleteDirectoryQuietly(work.toFile());
        }
        System.out.println(summary(result));
        // Flink and gRPC leave non-daemon threads behind; the result is written.
        System.exit(0);
    }

    static Configuration jobConfiguration(JobBackend backend) {
        Configuration config = new Configuration();
        config.set(PipelineOptions.MAX_PARALLELISM, MAX_PARALLELISM);
        config.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MANAGED_MEMORY);
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        config.set(RestOptions.BIND_PORT, "0");
        MetricsCapture.configure(config);
        config.addAll(backend.configuration());
        return config;
    }

    private static String summary(JsonObject r) {
        String rate =
                r.has("steadyRecordsPerSecond")
                        ? String.format(
                                "%,.0f records/s steady",
                                r.get("steadyRecordsPerSecond").getAsDouble())
                        : String.format(
                                "%,.0f records/s while all keys are active",
                                r.get("activeRecordsPerSecond").getAsDouble());
        return String.format(
                "%s %s %s: %s; load average %s -> %s",
                r.get("bench").getAsString(),
                r.get("backend").getAsString(),
                r.has("access") ? r.get("access").getAsString() : "",
                rate,
                r.get("loadAverageStart").getAsString(),
                r.get("loadAverageEnd").getAsString());
    }
}
