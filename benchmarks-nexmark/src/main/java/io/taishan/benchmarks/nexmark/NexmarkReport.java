package io.taishan.benchmarks.nexmark;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Stream;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The report of {@code bin/taishan-nexmark}: every run's JSON ({@link NexmarkRun}) in {@code
 * --runs} to one Markdown file (a summary table, then a table per query with every figure of every
 * backend), one JSON file with them all, and two PNG charts (events/s per query and backend; the
 * events/s of every backend but RocksDB and HashMap as a multiple of RocksDB's). A result is called
 * identical when every backend that finished the query has the same row count and, for a query
 * whose result does not depend on arrival order, the same digest.
 */
public final class NexmarkReport {
    static final String TAISHAN = "TAISHAN";
    static final String ROCKSDB = "ROCKSDB";
    static final String HASHMAP = "HASHMAP";
    static final List<String> BACKEND_ORDER =
            List.of(TAISHAN, "TAISHAN_ASYNC", "FORST", ROCKSDB, HASHMAP);

    private final Map<String, Map<String, JsonObject>> runs =
            new TreeMap<>(NexmarkReport::byNumber);
    private final List<String> backends = new ArrayList<>();

    private NexmarkReport() {}

    public static void main(String[] args) throws IOException {
        Map<String, String> opts = new LinkedHashMap<>();
        opts.put("runs", "runs");
        opts.put("machine", "");
        opts.put("out", "report.md");
        opts.put("json", "");
        opts.put("charts", ".");
        for (int i = 0; i + 1 < args.length; i += 2) {
            String key = args[i].replaceFirst("^--", "");
            if (!opts.containsKey(key)) {
                System.err.println("unknown option " + args[i] + "; options: " + opts.keySet());
                System.exit(2);
            }
            opts.put(key, args[i + 1]);
        }
        System.setProperty("java.awt.headless", "true");
        NexmarkReport report = new NexmarkReport();
        report.load(Path.of(opts.get("runs")));
        Path charts = Files.createDirectories(Path.of(opts.get("charts")));
        List<Path> written = report.charts(charts);
        String machine =
                opts.get("machine").isEmpty() ? "" : Files.readString(Path.of(opts.get("machine")));
        Path out = Path.of(opts.get("out"));
        Files.writeString(out, report.markdown(machine, out.toAbsolutePath().getParent(), written));
        if (!opts.get("json").isEmpty()) {
            Files.writeString(
                    Path.of(opts.get("json")),
                    new GsonBuilder().setPrettyPrinting().create().toJson(report.all()));
        }
        System.err.println("# report: " + out + "; charts: " + written);
    }

    private void load(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".json")).sorted().toList()) {
                JsonObject run = JsonParser.parseString(Files.readString(file)).getAsJsonObject();
                String backend = run.get("backend").getAsString();
                runs.computeIfAbsent(run.get("query").getAsString(), q -> new TreeMap<>())
                        .put(backend, run);
                if (!backends.contains(backend)) {
                    backends.add(backend);
                }
            }
        }
        backends.sort(
                (a, b) ->
                        Integer.compare(
                                BACKEND_ORDER.indexOf(a) & Integer.MAX_VALUE,
                                BACKEND_ORDER.indexOf(b) & Integer.MAX_VALUE));
    }

    private static int byNumber(String a, String b) {
        return Integer.compare(
                Integer.parseInt(a.replaceAll("\\D", "")),
                Integer.parseInt(b.replaceAll("\\D", "")));
    }

    private JsonObject all() {
        JsonObject all = new JsonObject();
        runs.forEach(
                (query, byBackend) -> {
                    JsonObject q = new JsonObject();
                    byBackend.forEach(q::add);
                    q.addProperty("identical", identical(query));
                    JsonObject vsRocksDb = new JsonObject();
                    JsonObject vsRocksDbSecondHalf = new JsonObject();
                    for (String b : compared()) {
                        ratio(query, b).ifPresent(r -> vsRocksDb.addProperty(b, r));
                        secondHalfRatio(query, b)
                                .ifPresent(r -> vsRocksDbSecondHalf.addProperty(b, r));
                    }
                    q.add("vsRocksDb", vsRocksDb);
                    q.add("vsRocksDbSecondHalf", vsRocksDbSecondHalf);
                    all.add(query, q);
                });
        return all;
    }

    private static boolean ok(JsonObject run) {
        return run != null && !run.has("error");
    }

    private Optional<Double> eventsPerSecond(String query, String backend) {
        JsonObject run = runs.get(query).get(backend);
        return ok(run) ? Optional.of(run.get("eventsPerSecond").getAsDouble()) : Optional.empty();
    }

    /** The second half's events/s ({@code NexmarkRun#secondHalf}), if the run recorded it. */
    private Optional<Double> secondHalfEventsPerSecond(String query, String backend) {
        JsonObject run = runs.get(query).get(backend);
        return ok(run) ? secondHalfRate(run) : Optional.empty();
    }

    private static long warmUpEvents(JsonObject run) {
        return run.has("option.warm-up-events") ? run.get("option.warm-up-events").getAsLong() : 0;
    }

    private static Optional<Double> secondHalfRate(JsonObject run) {
        return run.has("secondHalf")
                ? Optional.of(
                        run.getAsJsonObject("secondHalf").get("eventsPerSecond").getAsDouble())
                : Optional.empty();
    }

    /** The backends whose events/s are given as a multiple of RocksDB's. */
    private List<String> compared() {
        return backends.stream().filter(b -> !b.equals(ROCKSDB) && !b.equals(HASHMAP)).toList();
    }

    private static String label(String backend) {
        return switch (backend) {
            case TAISHAN -> "Taishan";
            case "TAISHAN_ASYNC" -> "Taishan async";
            case "FORST" -> "ForSt";
            case ROCKSDB -> "RocksDB";
            case HASHMAP -> "HashMap";
            default -> backend;
        };
    }

    private Optional<Double> ratio(String query, String backend) {
        return ratio(eventsPerSecond(query, backend), eventsPerSecond(query, ROCKSDB));
    }

    private Optional<Double> secondHalfRatio(String query, String backend) {
        return ratio(
                secondHalfEventsPerSecond(query, backend),
                secondHalfEventsPerSecond(query, ROCKSDB));
    }

    private static Optional<Double> ratio(Optional<Double> taishan, Optional<Double> rocksdb) {
        return taishan.isPresent() && rocksdb.isPresent()
                ? Optional.of(taishan.get() / rocksdb.get())
                : Optional.empty();
    }

    private static String geomean(List<Double> ratios) {
        return String.format(
                Locale.ROOT,
                "%.2f",
                Math.exp(ratios.stream().mapToDouble(Math::log).sum() / ratios.size()));
    }

    /** "yes", "NO (...)", "rows only (...)" or why it cannot be said. */
    private String identical(String query) {
        List<JsonObject> done =
                runs.get(query).values().stream().filter(NexmarkReport::ok).toList();
        if (done.size() < 2) {
            return "- (fewer than two backends finished)";
        }
        boolean rows =
                done.stream().map(r -> r.get("resultRows").getAsLong()).distinct().count() == 1;
        boolean digests =
                done.stream().map(r -> r.get("resultDigest").getAsString()).distinct().count() == 1;
        JsonObject first = done.get(0);
        if (!first.get("comparable").getAsBoolean()) {
            return rows
                    ? "rows only: " + first.get("orderDependence").getAsString()
                    : "NO: row counts differ";
        }
        if (rows && digests) {
            return "yes";
        }
        return rows ? "NO: same row count, different rows" : "NO: row counts differ";
    }

    private String markdown(String machine, Path outDir, List<Path> charts) {
        StringBuilder md = new StringBuilder();
        md.append("# Nexmark: ")
                .append(String.join(", ", backends.stream().map(NexmarkReport::label).toList()))
                .append("\n\n");
        JsonObject any =
                runs.values().stream()
                        .flatMap(q -> q.values().stream())
                        .filter(r -> r.has("option.events"))
                        .findFirst()
                        .orElseThrow(() -> new IllegalStateException("no run got to its job"));
        long warmUpEvents = warmUpEvents(any);
        String warmUp =
                warmUpEvents == 0
                        ? ""
                        : String.format(
                                Locale.ROOT,
                                ", each measured job after an unmeasured warm-up job of %,d events"
                                        + " in the same JVM",
                                warmUpEvents);
        md.append(
                String.format(
                        Locale.ROOT,
                        "Flink %s, %,d events per run (%s events/s of event time, seed %s), parallelism %s,"
                                + " max parallelism %s, checkpoints every %s, managed memory %s,"
                                + " mini-batch %s; one fresh JVM per query and backend%s,"
                                + " backends alternating query by query.\n\n",
                        any.has("flinkVersion") ? any.get("flinkVersion").getAsString() : "?",
                        any.get("option.events").getAsLong(),
                        any.get("option.event-rate").getAsString(),
                        any.get("option.seed").getAsString(),
                        any.get("option.parallelism").getAsString(),
                        any.get("option.max-parallelism").getAsString(),
                        any.get("option.checkpoint-interval").getAsString(),
                        any.get("option.managed-memory").getAsString(),
                        any.get("option.mini-batch").getAsString(),
                        warmUp));
        if (!machine.isBlank()) {
            md.append("```\n").append(machine.strip()).append("\n```\n\n");
        }
        md.append("## Summary\n\n");
        md.append("| query |");
        backends.forEach(b -> md.append(' ').append(b).append(" events/s |"));
        for (String b : compared()) {
            md.append(' ').append(label(b)).append(" ÷ RocksDB | ");
            md.append(label(b)).append(" ÷ RocksDB, second half |");
        }
        md.append(" checkpoint median ms (");
        md.append(String.join(" / ", backends)).append(") | start s (");
        md.append(String.join(" / ", backends)).append(") | identical |\n|---|");
        backends.forEach(b -> md.append("---:|"));
        compared().forEach(b -> md.append("---:|---:|"));
        md.append("---:|---:|---|\n");
        Map<String, List<Double>> ratios = new LinkedHashMap<>();
        Map<String, List<Double>> secondHalfRatios = new LinkedHashMap<>();
        for (String query : runs.keySet()) {
            md.append("| ").append(query).append(" |");
            for (String b : backends) {
                md.append(' ')
                        .append(
                                eventsPerSecond(query, b)
                                        .map(NexmarkReport::rate)
                                        .orElse(failed(query, b)))
                        .append(" |");
            }
            for (String b : compared()) {
                Optional<Double> ratio = ratio(query, b);
                ratio.ifPresent(ratios.computeIfAbsent(b, k -> new ArrayList<>())::add);
                md.append(' ')
                        .append(ratio.map(r -> String.format(Locale.ROOT, "%.2f", r)).orElse("-"));
                Optional<Double> secondHalf = secondHalfRatio(query, b);
                secondHalf.ifPresent(
                        secondHalfRatios.computeIfAbsent(b, k -> new ArrayList<>())::add);
                md.append(" | ")
                        .append(
                                secondHalf
                                        .map(r -> String.format(Locale.ROOT, "%.2f", r))
                                        .orElse("-"))
                        .append(" |");
            }
            md.append(' ').append(joined(query, r -> checkpointMedian(r)));
            md.append(" | ")
                    .append(
                            joined(
                                    query,
                                    r ->
                                            String.format(
                                                    Locale.ROOT,
                                                    "%.2f",
                                                    r.get("startSeconds").getAsDouble())));
            md.append(" | ").append(identical(query)).append(" |\n");
        }
        ratios.forEach(
                (b, whole) -> {
                    List<Double> half = secondHalfRatios.getOrDefault(b, List.of());
                    md.append("\nGeometric mean of ")
                            .append(label(b))
                            .append(" ÷ RocksDB over ")
                            .append(whole.size())
                            .append(" queries: **")
                            .append(geomean(whole))
                            .append("** (whole run)");
                    if (half.size() == whole.size()) {
                        md.append(", **").append(geomean(half)).append("** (second half)");
                    }
                    md.append(".\n");
                });
        md.append(
                "\nevents/s: the run's events over the time from the first event made (held until"
                        + " every subtask was RUNNING) to the last sink subtask's end of input."
                        + " second half: the same from the moment the source had made half the"
                        + " events, after most of the JVMs' warm-up (JIT compilation)."
                        + " start: submission to every subtask RUNNING (keyed state backends"
                        + " created). checkpoint: Flink's end-to-end duration, median of the"
                        + " completed ones. identical: same row count and same order-free digest"
                        + " of the final result on every backend that finished; \"rows only\":"
                        + " the query's result depends on arrival order, so only the row count is"
                        + " compared.\n\n");
        for (Path chart : charts) {
            md.append("![")
                    .append(chart.getFileName())
                    .append("](")
                    .append(outDir.relativize(chart.toAbsolutePath()))
                    .append(")\n\n");
        }
        md.append("## Per query\n");
        for (Map.Entry<String, Map<String, JsonObject>> q : runs.entrySet()) {
            perQuery(md, q.getKey(), q.getValue());
        }
        return md.toString();
    }

    private String failed(String query, String backend) {
        JsonObject run = runs.get(query).get(backend);
        return run == null ? "-" : "failed";
    }

    private String joined(String query, Function<JsonObject, String> figure) {
        List<String> parts = new ArrayList<>();
        for (String b : backends) {
            JsonObject run = runs.get(query).get(b);
            parts.add(ok(run) ? figure.apply(run) : "-");
        }
        return String.join(" / ", parts);
    }

    private static String checkpointMedian(JsonObject run) {
        JsonObject c = run.getAsJsonObject("checkpoints");
        return c.has("medianMillis")
                ? String.format(Locale.ROOT, "%.0f", c.get("medianMillis").getAsDouble())
                : "none";
    }

    private void perQuery(StringBuilder md, String query, Map<String, JsonObject> byBackend) {
        String title =
                byBackend.values().stream()
                        .filter(r -> r.has("title"))
                        .map(r -> ": " + r.get("title").getAsString())
                        .findFirst()
                        .orElse("");
        md.append("\n### ").append(query).append(title);
        md.append("\n\n| | ").append(String.join(" | ", backends)).append(" |\n|---|");
        backends.forEach(b -> md.append("---:|"));
        md.append('\n');
        row(md, byBackend, "events/s", r -> rate(r.get("eventsPerSecond").getAsDouble()));
        row(
                md,
                byBackend,
                "processing s (first event → last result)",
                r -> seconds(r, "processingSeconds"));
        row(
                md,
                byBackend,
                "start s (submission → all subtasks RUNNING)",
                r -> seconds(r, "startSeconds"));
        row(md, byBackend, "job s (submission → end of job)", r -> seconds(r, "jobSeconds"));
        row(
                md,
                byBackend,
                "checkpoints completed / failed / declined at the end",
                r -> {
                    JsonObject c = r.getAsJsonObject("checkpoints");
                    // Runs of an older harness counted the declines among the failures.
                    return c.get("completed").getAsInt()
                            + " / "
                            + c.get("failed").getAsInt()
                            + " / "
                            + (c.has("declinedByFinishingTasks")
                                    ? c.get("declinedByFinishingTasks").getAsString()
                                    : "?");
                });
        row(
                md,
                byBackend,
                "checkpoint median / max ms",
                r -> {
                    JsonObject c = r.getAsJsonObject("checkpoints");
                    return c.has("medianMillis")
                            ? String.format(
                                    Locale.ROOT,
                                    "%.0f / %d",
                                    c.get("medianMillis").getAsDouble(),
                                    c.get("maxMillis").getAsLong())
                            : "-";
                });
        row(
                md,
                byBackend,
                "longest subtask snapshot, median / max ms",
                r -> {
                    JsonObject c = r.getAsJsonObject("checkpoints");
                    return c.has("medianSnapshotMillis")
                            ? String.format(
                                    Locale.ROOT,
                                    "%.0f / %d",
                                    c.get("medianSnapshotMillis").getAsDouble(),
                                    c.get("maxSnapshotMillis").getAsLong())
                            : "-";
                });
        row(
                md,
                byBackend,
                "last checkpoint's state size",
                r -> {
                    JsonArray each = r.getAsJsonObject("checkpoints").getAsJsonArray("each");
                    return each.isEmpty()
                            ? "-"
                            : bytes(
                                    each.get(each.size() - 1)
                                            .getAsJsonObject()
                                            .get("stateSizeBytes")
                                            .getAsLong());
                });
        row(
                md,
                byBackend,
                "events/s, second half",
                r -> secondHalfRate(r).map(NexmarkReport::rate).orElse("-"));
        row(md, byBackend, "job JVM CPU s", r -> seconds(r, "processCpuSeconds"));
        row(
                md,
                byBackend,
                "job JVM CPU µs per event, whole run / second half",
                r -> cpuPerEvent(r, "processCpuSeconds", "jobCpuMicrosPerEvent"));
        row(
                md,
                byBackend,
                "kv-server CPU µs per event, whole run / second half",
                r -> cpuPerEvent(r, "kvServerCpuSeconds", "kvServerCpuMicrosPerEvent"));
        row(
                md,
                byBackend,
                "kv-server CPU s",
                r -> r.has("kvServerCpuSeconds") ? seconds(r, "kvServerCpuSeconds") : "-");
        row(
                md,
                byBackend,
                "kv-server calls per 1,000 events: reads / scans / writes",
                NexmarkReport::rpcs);
        row(
                md,
                byBackend,
                "result rows (changes)",
                r ->
                        String.format(
                                Locale.ROOT,
                                "%,d (%,d)",
                                r.get("resultRows").getAsLong(),
                                r.get("resultChanges").getAsLong()));
        row(
                md,
                byBackend,
                "result digest",
                r -> "`" + r.get("resultDigest").getAsString().substring(0, 16) + "`");
        row(
                md,
                byBackend,
                "load average at start → end",
                r ->
                        r.get("loadAverageStart").getAsString().split(" ")[0]
                                + " → "
                                + r.get("loadAverageEnd").getAsString().split(" ")[0]);
        md.append("\nIdentical: ").append(identical(query)).append(".\n");
        for (String b : backends) {
            JsonObject run = byBackend.get(b);
            if (run != null && run.has("error")) {
                md.append("\n")
                        .append(b)
                        .append(" failed: `")
                        .append(run.get("error").getAsString().lines().findFirst().orElse(""))
                        .append("` (its output: `runs/")
                        .append(query)
                        .append('-')
                        .append(b)
                        .append(".log`, Flink's log: `.flink.log`)\n");
                if (run.has("checkpoints")) {
                    for (JsonElement f :
                            run.getAsJsonObject("checkpoints").getAsJsonArray("failures")) {
                        md.append("- checkpoint ")
                                .append(f.getAsString().lines().findFirst().orElse(""))
                                .append('\n');
                    }
                }
            }
        }
    }

    private void row(
            StringBuilder md,
            Map<String, JsonObject> byBackend,
            String name,
            Function<JsonObject, String> figure) {
        md.append("| ").append(name).append(" |");
        for (String b : backends) {
            JsonObject run = byBackend.get(b);
            md.append(' ')
                    .append(ok(run) ? figure.apply(run) : run == null ? "-" : "failed")
                    .append(" |");
        }
        md.append('\n');
    }

    /** Taishan's RPCs ({@code taishan.rpc.<kind>.count}, summed over subtasks) per 1,000 events. */
    private static String rpcs(JsonObject r) {
        if (!r.has("backendMetrics")) {
            return "-";
        }
        JsonObject m = r.getAsJsonObject("backendMetrics");
        double per = 1000.0 / r.get("events").getAsLong();
        Function<String, Double> count =
                kind ->
                        m.has("taishan.rpc." + kind + ".count")
                                ? m.get("taishan.rpc." + kind + ".count").getAsDouble()
                                : 0.0;
        double reads = count.apply("get") + count.apply("multi_get");
        double scans = count.apply("scan");
        double writes = count.apply("write");
        if (reads + scans + writes == 0) {
            return "-";
        }
        return String.format(
                Locale.ROOT, "%.1f / %.1f / %.1f", reads * per, scans * per, writes * per);
    }

    private static String cpuPerEvent(JsonObject r, String wholeSeconds, String secondHalf) {
        if (!r.has(wholeSeconds)) {
            return "-";
        }
        String whole =
                String.format(
                        Locale.ROOT,
                        "%.1f",
                        r.get(wholeSeconds).getAsDouble() * 1e6 / r.get("events").getAsLong());
        JsonObject half = r.getAsJsonObject("secondHalf");
        return half != null && half.has(secondHalf)
                ? whole
                        + " / "
                        + String.format(Locale.ROOT, "%.1f", half.get(secondHalf).getAsDouble())
                : whole;
    }

    private static String rate(double v) {
        return String.format(Locale.ROOT, "%,.0f", v);
    }

    private static String seconds(JsonObject r, String field) {
        JsonElement e = r.get(field);
        return String.format(Locale.ROOT, "%.2f", e.getAsDouble());
    }

    private static String bytes(long b) {
        return b >= 1 << 20
                ? String.format(Locale.ROOT, "%.1f MiB", b / 1048576.0)
                : String.format(Locale.ROOT, "%.1f KiB", b / 1024.0);
    }

    private List<Path> charts(Path dir) throws IOException {
        List<Path> written = new ArrayList<>();
        List<String> complete =
                runs.keySet().stream()
                        .filter(
                                q ->
                                        backends.stream()
                                                .allMatch(b -> eventsPerSecond(q, b).isPresent()))
                        .toList();
        if (!complete.isEmpty()) {
            CategoryChart chart =
                    chart("Nexmark events/s per query (log scale; higher is better)", "events/s");
            double min = Double.MAX_VALUE;
            double max = 0;
            for (String b : backends) {
                List<Double> values =
                        complete.stream().map(q -> eventsPerSecond(q, b).orElseThrow()).toList();
                min = Math.min(min, values.stream().mapToDouble(v -> v).min().orElse(1));
                max = Math.max(max, values.stream().mapToDouble(v -> v).max().orElse(1));
                chart.addSeries(b, complete, values);
            }
            written.add(save(chart, dir.resolve("nexmark-events-per-second.png"), min, max));
        }
        List<String> compared = compared();
        List<String> both =
                runs.keySet().stream()
                        .filter(q -> compared.stream().allMatch(b -> ratio(q, b).isPresent()))
                        .toList();
        if (!compared.isEmpty() && !both.isEmpty()) {
            String whose =
                    compared.size() == 1 ? label(compared.get(0)) + "'s events/s" : "events/s";
            CategoryChart chart =
                    chart(
                            whose + " as a multiple of RocksDB's (log scale; 1 = as fast)",
                            "× RocksDB");
            List<Double> ratios = new ArrayList<>();
            for (String b : compared) {
                List<Double> whole = both.stream().map(q -> ratio(q, b).orElseThrow()).toList();
                chart.addSeries(compared.size() == 1 ? "whole run" : label(b), both, whole);
                ratios.addAll(whole);
            }
            String only = compared.get(0);
            if (compared.size() == 1
                    && both.stream().allMatch(q -> secondHalfRatio(q, only).isPresent())) {
                List<Double> half =
                        both.stream().map(q -> secondHalfRatio(q, only).orElseThrow()).toList();
                chart.addSeries("second half", both, half);
                ratios.addAll(half);
            }
            double min = Math.min(1, ratios.stream().mapToDouble(v -> v).min().orElse(1));
            double max = Math.max(1, ratios.stream().mapToDouble(v -> v).max().orElse(1));
            written.add(save(chart, dir.resolve("nexmark-vs-rocksdb.png"), min, max));
        }
        return written;
    }

    private static CategoryChart chart(String title, String yTitle) {
        CategoryChart chart =
                new CategoryChartBuilder()
                        .width(1200)
                        .height(600)
                        .title(title)
                        .xAxisTitle("query")
                        .yAxisTitle(yTitle)
                        .build();
        chart.getStyler()
                .setYAxisLogarithmic(true)
                .setLegendPosition(Styler.LegendPosition.OutsideS)
                .setLegendLayout(Styler.LegendLayout.Horizontal)
                .setChartBackgroundColor(java.awt.Color.WHITE);
        chart.getStyler().setAvailableSpaceFill(0.85);
        return chart;
    }

    private static Path save(CategoryChart chart, Path file, double min, double max)
            throws IOException {
        // Bars start at the axis minimum, which a log axis must be given: whole decades.
        chart.getStyler()
                .setYAxisMin(Math.pow(10, Math.floor(Math.log10(min))))
                .setYAxisMax(Math.pow(10, Math.ceil(Math.log10(max))));
        BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
        return file;
    }
}
