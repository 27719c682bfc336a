package io.taishan.benchmarks.report;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One result of JMH's JSON output ({@code -rf json}, or {@code StateSuite --json}) for the state
 * suite: the benchmark, its parameters, the primary score and the sums of the {@code RpcCounters}
 * over the measured iterations (operations, RPCs, and the CPU time of the task's JVM and of the
 * kv-server over {@code cpuOps} of those operations). {@code run} names the JVM it ran in: each
 * side of the comparison has its own HashMap baseline.
 */
record JmhResult(
        String run,
        String benchmarkClass,
        String benchmark,
        String mode,
        String backend,
        String cache,
        String access,
        int setupKeyCount,
        double score,
        double scoreError,
        String unit,
        int iterations,
        double ops,
        double readRpcs,
        double rpcs,
        double cpuOps,
        double taskJvmCpuNanos,
        double stateProcessCpuNanos) {

    static List<JmhResult> read(String run, Path json) throws IOException {
        List<JmhResult> results = new ArrayList<>();
        try (Reader reader = Files.newBufferedReader(json)) {
            for (JsonElement element : JsonParser.parseReader(reader).getAsJsonArray()) {
                JsonObject result = element.getAsJsonObject();
                String fullName = result.get("benchmark").getAsString();
                String[] parts = fullName.split("\\.");
                JsonObject params = result.getAsJsonObject("params");
                JsonObject primary = result.getAsJsonObject("primaryMetric");
                JsonObject secondary = result.getAsJsonObject("secondaryMetrics");
                results.add(
                        new JmhResult(
                                run,
                                parts[parts.length - 2],
                                parts[parts.length - 1],
                                result.get("mode").getAsString(),
                                params.get("backend").getAsString(),
                                params.get("cache").getAsString(),
                                params.get("access").getAsString(),
                                params.get("setupKeyCount").getAsInt(),
                                primary.get("score").getAsDouble(),
                                number(primary.get("scoreError")),
                                primary.get("scoreUnit").getAsString(),
                                primary.getAsJsonArray("rawData").get(0).getAsJsonArray().size(),
                                sum(secondary, "ops"),
                                sum(secondary, "readRpcs"),
                                sum(secondary, "rpcs"),
                                sum(secondary, "cpuOps"),
                                sum(secondary, "taskJvmCpuNanos"),
                                sum(secondary, "stateProcessCpuNanos")));
            }
        }
        return results;
    }

    /** JMH writes "NaN" as a string when one iteration gives no error bar. */
    private static double number(JsonElement element) {
        String text = element.getAsString();
        return text.equals("NaN") ? Double.NaN : Double.parseDouble(text);
    }

    private static double sum(JsonObject secondary, String counter) {
        if (secondary == null || !secondary.has(counter)) {
            return 0;
        }
        return secondary.getAsJsonObject(counter).get("score").getAsDouble();
    }

    boolean remote() {
        return backend.equals("TAISHAN");
    }

    /** Read RPCs per 1,000 operations; NaN for a backend without a server. */
    double readRpcsPerThousand() {
        return remote() && ops > 0 ? readRpcs * 1000 / ops : Double.NaN;
    }

    double rpcsPerThousand() {
        return remote() && ops > 0 ? rpcs * 1000 / ops : Double.NaN;
    }

    /** CPU µs of the task's JVM per operation; NaN where the run did not measure it. */
    double taskJvmCpuMicrosPerOp() {
        return cpuOps > 0 ? taskJvmCpuNanos / 1000 / cpuOps : Double.NaN;
    }

    /** CPU µs of the kv-server per operation; NaN for a backend without one, or not measured. */
    double serverCpuMicrosPerOp() {
        return remote() && cpuOps > 0 ? stateProcessCpuNanos / 1000 / cpuOps : Double.NaN;
    }

    /** The column a result goes in: a backend, Taishan by cache, HashMap by the run it was in. */
    String variant() {
        return switch (backend) {
            case "TAISHAN" -> cache.equals("none") ? "Taishan" : "Taishan cache=" + cache;
            case "HASHMAP" -> "HashMap (" + run + " run)";
            case "ROCKSDB" -> "RocksDB";
            default -> backend + (cache.equals("none") ? "" : " cache=" + cache);
        };
    }
}
