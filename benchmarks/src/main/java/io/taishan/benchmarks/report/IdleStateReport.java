package io.taishan.benchmarks.report;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The report of {@code bin/taishan-idle-bench}: Markdown tables of its JSON results ({@code
 * io.taishan.benchmarks.job.IdleStateBench}, {@code SweepCostProbe}) and two PNG charts (XChart):
 * the kv-server's live entries over the SQL run, and heap against keys in the cleanup-timer run.
 * Every figure is copied or derived from a measured value; nothing is filled in.
 */
public final class IdleStateReport {
    private static final String[] BACKENDS = {"TAISHAN", "ROCKSDB", "HASHMAP"};
    private static final double MIB = 1 << 20;

    private final Map<String, JsonObject> runs = new TreeMap<>();
    private final StringBuilder md = new StringBuilder();

    private IdleStateReport(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".json")).sorted().toList()) {
                String name = f.getFileName().toString().replace(".json", "");
                runs.put(name, JsonParser.parseString(Files.readString(f)).getAsJsonObject());
            }
        }
    }

    public static void main(String[] args) throws IOException {
        Path runsDir = null;
        Path machine = null;
        Path charts = Path.of(".");
        Path out = Path.of("report.md");
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--runs" -> runsDir = Path.of(args[i + 1]);
                case "--machine" -> machine = Path.of(args[i + 1]);
                case "--charts" -> charts = Path.of(args[i + 1]);
                case "--out" -> out = Path.of(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (runsDir == null) {
            throw new IllegalArgumentException("--runs DIR is required");
        }
        IdleStateReport report = new IdleStateReport(runsDir);
        if (machine != null && Files.exists(machine)) {
            report.line("Machine and runs (from the runner):");
            report.line("");
            report.line("```");
            report.md.append(Files.readString(machine));
            report.line("```");
            report.line("");
        }
        Files.createDirectories(charts);
        report.cleanup(charts);
        report.sql(charts);
        report.probe();
        Files.writeString(out, report.md.toString());
        System.out.print(report.md);
    }

    // ---- cleanup timers

    private void cleanup(Path charts) throws IOException {
        List<String> names = names("cleanup-");
        if (names.isEmpty()) {
            return;
        }
        JsonObject any = runs.get(names.get(0));
        line(
                "#### Cleanup timers: throughput (steady phase: %,d records over %,d keys after a"
                        + " load of every key once; records/s, higher is better)",
                any.get("steadyRecords").getAsLong(), any.get("keys").getAsLong());
        line("");
        line(
                "| access | round | backend | records/s | × HashMap (same round) | steady s | load"
                        + " average start → end |");
        line("|---|--:|---|--:|--:|--:|---|");
        for (String access : List.of("UNIFORM", "ZIPF")) {
            for (int round : rounds("cleanup-" + access + "-")) {
                JsonObject hashMap = runs.get("cleanup-" + access + "-HASHMAP-r" + round);
                for (String backend : BACKENDS) {
                    JsonObject r = runs.get("cleanup-" + access + "-" + backend + "-r" + round);
                    if (r == null) {
                        continue;
                    }
                    double rate = r.get("steadyRecordsPerSecond").getAsDouble();
                    line(
                            "| %s | %d | %s | %,.0f | %s | %.1f | %s → %s |",
                            access,
                            round,
                            backend,
                            rate,
                            hashMap == null
                                    ? "–"
                                    : String.format(
                                            "%.3f",
                                            rate
                                                    / hashMap.get("steadyRecordsPerSecond")
                                                            .getAsDouble()),
                            r.get("steadySeconds").getAsDouble(),
                            r.get("loadAverageStart").getAsString(),
                            r.get("loadAverageEnd").getAsString());
                }
            }
        }
        line("");
        line(
                "#### Cleanup timers: Taishan's calls per record (steady phase, from its own metrics)");
        line("");
        List<String> taishan = names.stream().filter(n -> n.contains("-TAISHAN-")).toList();
        TreeMap<String, Boolean> keys = new TreeMap<>();
        for (String n : taishan) {
            runs.get(n)
                    .getAsJsonObject("steadyMetricsPerRecord")
                    .keySet()
                    .forEach(k -> keys.put(k, true));
        }
        StringBuilder header = new StringBuilder("| metric (per record) |");
        StringBuilder rule = new StringBuilder("|---|");
        for (String n : taishan) {
            header.append(' ')
                    .append(n.replace("cleanup-", "").replace("-TAISHAN", ""))
                    .append(" |");
            rule.append("--:|");
        }
        line(header.toString());
        line(rule.toString());
        for (String k : keys.keySet()) {
            StringBuilder row = new StringBuilder("| `" + k + "` |");
            for (String n : taishan) {
                JsonElement v = runs.get(n).getAsJsonObject("steadyMetricsPerRecord").get(k);
                row.append(' ').append(v == null ? "0" : perRecord(v.getAsDouble())).append(" |");
            }
            line(row.toString());
        }
        StringBuilder reads = new StringBuilder("| **read RPCs** (`get` + `multi_get` + `scan`) |");
        for (String n : taishan) {
            JsonObject m = runs.get(n).getAsJsonObject("steadyMetricsPerRecord");
            double sum = 0;
            for (String kind : List.of("get", "multi_get", "scan")) {
                JsonElement v = m.get("taishan.rpc." + kind + ".count");
                sum += v == null ? 0 : v.getAsDouble();
            }
            reads.append(" **").append(perRecord(sum)).append("** |");
        }
        line(reads.toString());
        line("");
        line(
                "#### Cleanup timers: heap after a full GC against keys loaded (MiB; the source"
                        + " pauses for the last point), and resident memory of the job's JVM");
        line("");
        line("| run | 25% keys | 50% | 75% | 100% | heap growth per key | RSS at 100% (MiB) |");
        line("|---|--:|--:|--:|--:|--:|--:|");
        XYChart chart =
                new XYChartBuilder()
                        .width(1200)
                        .height(650)
                        .title("Cleanup-timer job: heap after full GC against keys loaded")
                        .xAxisTitle("keys loaded (state value + one timer each)")
                        .yAxisTitle("heap used after GC (MiB)")
                        .build();
        style(chart);
        for (String n : names) {
            JsonArray heap = runs.get(n).getAsJsonArray("heap");
            StringBuilder row = new StringBuilder("| " + n.replace("cleanup-", "") + " |");
            List<Double> x = new ArrayList<>();
            List<Double> y = new ArrayList<>();
            for (JsonElement e : heap) {
                JsonObject p = e.getAsJsonObject();
                x.add(p.get("keys").getAsDouble());
                y.add(p.get("heapBytes").getAsDouble() / MIB);
                row.append(String.format(" %.0f |", p.get("heapBytes").getAsDouble() / MIB));
            }
            double slope = slope(x, y) * MIB;
            JsonObject last = heap.get(heap.size() - 1).getAsJsonObject();
            row.append(String.format(" %.0f B |", slope));
            row.append(String.format(" %.0f |", last.get("residentBytes").getAsDouble() / MIB));
            line(row.toString());
            if (n.endsWith("-r1")) {
                chart.addSeries(n.replace("cleanup-", "").replace("-r1", ""), x, y);
            }
        }
        line("");
        save(chart, charts.resolve("idle-cleanup-heap.png"));
    }

    /** Least-squares slope of y over x. */
    private static double slope(List<Double> x, List<Double> y) {
        int n = x.size();
        double mx = x.stream().mapToDouble(d -> d).average().orElse(0);
        double my = y.stream().mapToDouble(d -> d).average().orElse(0);
        double num = 0;
        double den = 0;
        for (int i = 0; i < n; i++) {
            num += (x.get(i) - mx) * (y.get(i) - my);
            den += (x.get(i) - mx) * (x.get(i) - mx);
        }
        return den == 0 ? 0 : num / den;
    }

    // ---- SQL GROUP BY with TTL

    private void sql(Path charts) throws IOException {
        List<String> names = names("sql-");
        if (names.isEmpty()) {
            return;
        }
        JsonObject any = runs.get(names.get(0));
        long keys = any.get("keys").getAsLong();
        long active = any.get("activeKeys").getAsLong();
        double ttl = any.get("ttlMillis").getAsDouble() / 1000;
        line(
                "#### SQL `GROUP BY` with `table.exec.state.ttl` = %.0f s: throughput while all %,d"
                        + " keys arrive (records/s, higher is better)",
                ttl, keys);
        line("");
        line(
                "| round | backend | records/s | × HashMap (same round) | seconds | load average start → end |");
        line("|--:|---|--:|--:|--:|---|");
        for (int round : rounds("sql-")) {
            JsonObject hashMap = runs.get("sql-HASHMAP-r" + round);
            for (String backend : BACKENDS) {
                JsonObject r = runs.get("sql-" + backend + "-r" + round);
                if (r == null) {
                    continue;
                }
                double rate = r.get("activeRecordsPerSecond").getAsDouble();
                line(
                        "| %d | %s | %,.0f | %s | %.1f | %s → %s |",
                        round,
                        backend,
                        rate,
                        hashMap == null
                                ? "–"
                                : String.format(
                                        "%.3f",
                                        rate / hashMap.get("activeRecordsPerSecond").getAsDouble()),
                        r.get("activeSeconds").getAsDouble(),
                        r.get("loadAverageStart").getAsString(),
                        r.get("loadAverageEnd").getAsString());
            }
        }
        line("");
        line(
                "#### SQL: the kv-server's live entries (exact count each second; %,d keys, then"
                        + " only %,d at %,.0f records/s)",
                keys, active, any.get("quietRecordsPerSecond").getAsDouble());
        line("");
        line(
                "t = 0 is the first record; \"all keys seen\" is when the last silent key was last"
                        + " written, so its entry may go at all keys seen + TTL.");
        line("");
        line(
                "| run | all keys seen (s) | peak live entries | live bytes at peak | at all keys"
                        + " seen + TTL | live entries at the end | active keys | entries expired"
                        + " | first sample ≤ 1.1 × active keys (s after all keys seen + TTL) |"
                        + " expiry thread CPU (s) | sampler CPU (s) | server process CPU (s) |");
        line("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
        XYChart chart =
                new XYChartBuilder()
                        .width(1200)
                        .height(650)
                        .title(
                                String.format(
                                        Locale.ROOT,
                                        "SQL GROUP BY, TTL %.0f s: %,d keys, then only %,d -"
                                                + " the store's live entries",
                                        ttl,
                                        keys,
                                        active))
                        .xAxisTitle("seconds since the first record")
                        .yAxisTitle("entries")
                        .build();
        style(chart);
        for (String n : names) {
            JsonObject r = runs.get(n);
            long t0 = r.get("firstRecordMillis").getAsLong();
            double allSeen = (r.get("allKeysSeenMillis").getAsLong() - t0) / 1000.0;
            JsonArray store = r.getAsJsonArray("storeSamples");
            if (store.size() > 0) {
                List<Double> x = new ArrayList<>();
                List<Double> y = new ArrayList<>();
                long peak = 0;
                long peakBytes = 0;
                long atExpiry = -1;
                double settled = Double.NaN;
                JsonObject first = null;
                JsonObject last = null;
                for (JsonElement e : store) {
                    JsonObject s = e.getAsJsonObject();
                    double t = (s.get("epochMillis").getAsLong() - t0) / 1000.0;
                    long live = s.get("liveEntries").getAsLong();
                    if (t < -1) {
                        continue;
                    }
                    first = first == null ? s : first;
                    last = s;
                    x.add(t);
                    y.add((double) live);
                    if (live > peak) {
                        peak = live;
                        peakBytes = s.get("liveBytes").getAsLong();
                    }
                    if (atExpiry < 0 && t >= allSeen + ttl) {
                        atExpiry = live;
                    }
                    if (Double.isNaN(settled) && t > allSeen && live <= 1.1 * active) {
                        settled = t - allSeen - ttl;
                    }
                }
                line(
                        "| %s | %.1f | %,d | %.1f MiB | %,d | %,d | %,d | %,d | %s | %.2f | %.2f |"
                                + " %.1f |",
                        n.replace("sql-", ""),
                        allSeen,
                        peak,
                        peakBytes / MIB,
                        atExpiry,
                        last.get("liveEntries").getAsLong(),
                        active,
                        last.get("expiredEntries").getAsLong(),
                        Double.isNaN(settled) ? "never" : String.format("%+.1f", settled),
                        (last.get("expiryCpuNanos").getAsLong()
                                        - first.get("expiryCpuNanos").getAsLong())
                                / 1e9,
                        (last.get("samplerCpuNanos").getAsLong()
                                        - first.get("samplerCpuNanos").getAsLong())
                                / 1e9,
                        (last.get("processCpuNanos").getAsLong()
                                        - first.get("processCpuNanos").getAsLong())
                                / 1e9);
                XYSeries series = chart.addSeries("Taishan live entries, " + round(n), x, y);
                series.setMarker(SeriesMarkers.NONE);
            }
            List<Double> ex = new ArrayList<>();
            List<Double> ey = new ArrayList<>();
            for (JsonElement e : r.getAsJsonArray("jobSamples")) {
                JsonObject s = e.getAsJsonObject();
                if (s.has("rocksdbEstimateNumKeys")) {
                    ex.add((s.get("epochMillis").getAsLong() - t0) / 1000.0);
                    ey.add(s.get("rocksdbEstimateNumKeys").getAsDouble());
                }
            }
            if (!ex.isEmpty()) {
                XYSeries series = chart.addSeries("RocksDB estimate-num-keys, " + round(n), ex, ey);
                series.setMarker(SeriesMarkers.NONE);
            }
        }
        line("");
        save(chart, charts.resolve("idle-sql-live-entries.png"));
    }

    private static String round(String name) {
        return "round " + name.substring(name.lastIndexOf("-r") + 2);
    }

    // ---- sweep cost probe

    private void probe() {
        List<String> names = names("probe-");
        if (names.isEmpty()) {
            return;
        }
        JsonObject any = runs.get(names.get(0));
        double millions = any.get("entries").getAsDouble() / 1e6;
        line(
                "#### One expiry sweep over %,d entries of one TTL'd state (%.0f MiB of keys and"
                        + " values, 128 shards), on the sweeping thread, unthrottled",
                any.get("entries").getAsLong(), any.get("bytes").getAsDouble() / MIB);
        line("");
        line(
                "| run | pass | deleted | wall s | sweep thread CPU s per million entries | process"
                        + " CPU s | MB read per million entries | load average |");
        line("|---|---|--:|--:|--:|--:|--:|---|");
        for (String n : names) {
            JsonObject r = runs.get(n);
            double mbPerMillion = r.get("bytes").getAsDouble() / 1e6 / millions;
            for (JsonElement e : r.getAsJsonArray("passes")) {
                JsonObject p = e.getAsJsonObject();
                line(
                        "| %s | %s | %,d | %.2f | %.3f | %.2f | %.0f | %s |",
                        n.replace("probe-", ""),
                        p.get("pass").getAsString(),
                        p.get("deleted").getAsLong(),
                        p.get("wallSeconds").getAsDouble(),
                        p.get("threadCpuSeconds").getAsDouble() / millions,
                        p.get("processCpuSeconds").getAsDouble(),
                        mbPerMillion,
                        p.get("loadAverage").getAsString());
            }
        }
        line("");
    }

    // ---- helpers

    private List<String> names(String prefix) {
        return runs.keySet().stream().filter(n -> n.startsWith(prefix)).toList();
    }

    private List<Integer> rounds(String prefix) {
        return names(prefix).stream()
                .map(n -> Integer.parseInt(n.substring(n.lastIndexOf("-r") + 2)))
                .distinct()
                .sorted()
                .toList();
    }

    private static String perRecord(double v) {
        if (v == 0) {
            return "0";
        }
        return Math.abs(v) >= 0.1 ? String.format("%.3f", v) : String.format("%.2e", v);
    }

    private static void style(XYChart chart) {
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
        chart.getStyler().setMarkerSize(5);
    }

    private void save(XYChart chart, Path file) throws IOException {
        if (chart.getSeriesMap().isEmpty()) {
            return;
        }
        BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
        line("![%s](%s)", chart.getTitle(), file.getFileName());
        line("");
    }

    private void line(String format, Object... args) {
        md.append(args.length == 0 ? format : String.format(Locale.ROOT, format, args))
                .append('\n');
    }
}
