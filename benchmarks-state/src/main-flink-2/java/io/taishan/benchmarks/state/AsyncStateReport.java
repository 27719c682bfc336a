package io.taishan.benchmarks.state;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The Markdown report of the state suite on Flink 2 ({@code bin/taishan-state-compare --flink 2}):
 * synchronous reads ({@code valueGet}) and the same reads through the asynchronous State V2 API
 * ({@code asyncValueGet}) on every backend of both runs, each against Flink's RocksDB backend read
 * synchronously (the fastest way RocksDB reads on Flink 2: its asynchronous operators go through
 * Flink's adaptor, one request at a time) and against each backend's own synchronous reads, with
 * the read RPCs behind every figure.
 *
 * <p>The two runs (Taishan's JVMs and RocksDB's) are separate processes minutes apart, so every
 * ratio across them is also given normalised by HashMap's result of the same benchmark in each run.
 *
 * <pre>
 * AsyncStateReport --out report.md [--machine machine.txt] --taishan FILE.json... --rocksdb FILE.json...
 * </pre>
 */
public final class AsyncStateReport {
    private static final String SYNC = "valueGet";
    private static final String ASYNC = "asyncValueGet";

    /** One JMH result: which run, benchmark method, backend, cache, access; score in ops/ms. */
    record Result(
            String run,
            String benchmark,
            String backend,
            String cache,
            String access,
            double score,
            double error,
            double readRpcsPer1000) {

        String label() {
            String name = backend + (cache.equals(ReadCache.NONE) ? "" : " cache=" + cache);
            return name + (benchmark.equals(ASYNC) ? ", async API" : ", sync API");
        }
    }

    private final List<Result> results = new ArrayList<>();

    private AsyncStateReport() {}

    public static void main(String[] args) throws Exception {
        AsyncStateReport report = new AsyncStateReport();
        Path out = null;
        Path machine = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out" -> out = Path.of(args[++i]);
                case "--machine" -> machine = Path.of(args[++i]);
                case "--taishan" -> report.read("Taishan", Path.of(args[++i]));
                case "--rocksdb" -> report.read("RocksDB", Path.of(args[++i]));
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (out == null) {
            throw new IllegalArgumentException("--out FILE is required");
        }
        StringBuilder md = new StringBuilder("# The state suite on Flink 2: synchronous and");
        md.append(" asynchronous reads\n\n");
        if (machine != null && Files.exists(machine)) {
            md.append("```\n").append(Files.readString(machine).strip()).append("\n```\n\n");
        }
        report.write(md);
        Files.writeString(out, md);
        System.out.print(md);
    }

    private void read(String run, Path file) throws Exception {
        JsonArray array = JsonParser.parseString(Files.readString(file)).getAsJsonArray();
        for (JsonElement element : array) {
            JsonObject o = element.getAsJsonObject();
            String benchmark = o.get("benchmark").getAsString();
            benchmark = benchmark.substring(benchmark.lastIndexOf('.') + 1);
            JsonObject params = o.getAsJsonObject("params");
            JsonObject primary = o.getAsJsonObject("primaryMetric");
            JsonObject secondary = o.getAsJsonObject("secondaryMetrics");
            double ops = secondary.getAsJsonObject("ops").get("score").getAsDouble();
            double reads = secondary.getAsJsonObject("readRpcs").get("score").getAsDouble();
            results.add(
                    new Result(
                            run,
                            benchmark,
                            params.get("backend").getAsString(),
                            params.get("cache").getAsString(),
                            params.get("access").getAsString(),
                            primary.get("score").getAsDouble(),
                            primary.get("scoreError").getAsDouble(),
                            ops > 0 ? reads * 1000 / ops : 0));
        }
    }

    private void write(StringBuilder md) {
        List<String> accesses = results.stream().map(Result::access).distinct().sorted().toList();
        for (String access : accesses) {
            md.append("## ").append(access).append(" access\n\n");
            md.append(
                    "| backend, API | ops/ms | ± | ÷ RocksDB sync | ÷ RocksDB sync, HashMap-normalised"
                            + " | ÷ own sync API | read RPCs per 1,000 ops |\n");
            md.append("|---|---:|---:|---:|---:|---:|---:|\n");
            Optional<Result> rocksSync = find("RocksDB", SYNC, "ROCKSDB", ReadCache.NONE, access);
            List<Result> rows =
                    results.stream()
                            .filter(r -> r.access().equals(access))
                            .sorted(
                                    Comparator.comparing(Result::backend)
                                            .thenComparing(Result::cache)
                                            .thenComparing(
                                                    Result::benchmark, Comparator.reverseOrder())
                                            .thenComparing(Result::run))
                            .toList();
            for (Result r : rows) {
                String label = r.label();
                if (r.backend().equals(HashMapBackendProvider.HASHMAP)) {
                    label += " (" + r.run() + " run)";
                }
                md.append(
                        String.format(
                                Locale.ROOT,
                                "| %s | %,.1f | %,.1f | %s | %s | %s | %.1f |%n",
                                label,
                                r.score(),
                                r.error(),
                                rocksSync.map(x -> ratio(r.score() / x.score())).orElse("–"),
                                rocksSync.flatMap(x -> normalised(r, x)).orElse("–"),
                                r.benchmark().equals(ASYNC)
                                        ? find(r.run(), SYNC, r.backend(), r.cache(), access)
                                                .map(s -> ratio(r.score() / s.score()))
                                                .orElse("–")
                                        : "1",
                                r.readRpcsPer1000()));
            }
            md.append('\n');
        }
    }

    /**
     * {@code r ÷ rocks} with {@code r} carried over to the RocksDB run's machine: scaled by
     * HashMap's score of {@code r}'s benchmark in the RocksDB run over its score in {@code r}'s
     * run.
     */
    private Optional<String> normalised(Result r, Result rocks) {
        String hashMap = HashMapBackendProvider.HASHMAP;
        Optional<Result> own = find(r.run(), r.benchmark(), hashMap, ReadCache.NONE, r.access());
        Optional<Result> theirs =
                find(rocks.run(), r.benchmark(), hashMap, ReadCache.NONE, r.access());
        if (own.isEmpty() || theirs.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(
                ratio(r.score() / own.get().score() * theirs.get().score() / rocks.score()));
    }

    private Optional<Result> find(
            String run, String benchmark, String backend, String cache, String access) {
        return results.stream()
                .filter(
                        r ->
                                r.run().equals(run)
                                        && r.benchmark().equals(benchmark)
                                        && r.backend().equals(backend)
                                        && r.cache().equals(cache)
                                        && r.access().equals(access))
                .findFirst();
    }

    private static String ratio(double value) {
        return String.format(Locale.ROOT, value >= 10 ? "%.1f×" : "%.2f×", value);
    }
}
