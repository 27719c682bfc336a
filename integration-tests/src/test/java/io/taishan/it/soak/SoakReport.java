package io.taishan.it.soak;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Turns a soak's CSV into its report: one PNG of six panels (XChart) and a Markdown file with the
 * run's settings, a table of the curves at evenly spaced times and the verdict of {@link
 * SoakBounds}. Every figure is read from the CSV; nothing is smoothed or filled in.
 *
 * <p>{@code SoakITCase} calls it at the end of each run; it also runs on its own, on a CSV kept
 * from an earlier run: {@code SoakReport <soak.csv> <out dir> [retained checkpoints]}.
 */
public final class SoakReport {
    static final String CHART = "soak.png";
    static final String MARKDOWN = "soak.md";
    static final String RUN_PROPERTIES = "run.properties";

    private static final int TABLE_ROWS = 12;

    private SoakReport() {}

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: SoakReport <soak.csv> <out dir> [retained checkpoints]");
            System.exit(2);
        }
        Path csv = Path.of(args[0]);
        int retained = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        SoakCurve curve = SoakCurve.read(csv);
        Properties run = new Properties();
        Path props = csv.resolveSibling(RUN_PROPERTIES);
        if (Files.exists(props)) {
            try (var in = Files.newBufferedReader(props)) {
                run.load(in);
            }
        }
        write(curve, SoakBounds.check(curve, retained), run, Path.of(args[1]));
    }

    /** Writes {@value #CHART} and {@value #MARKDOWN} into {@code outDir}. */
    static void write(SoakCurve curve, List<SoakBounds.Check> checks, Properties run, Path outDir)
            throws IOException {
        System.setProperty("java.awt.headless", "true");
        Files.createDirectories(outDir);
        chart(curve, outDir.resolve(CHART));
        Files.writeString(outDir.resolve(MARKDOWN), markdown(curve, checks, run));
    }

    private static void chart(SoakCurve curve, Path png) throws IOException {
        List<XYChart> panels = new ArrayList<>();
        panels.add(
                panel(
                        curve,
                        "kv-server memory (MiB)",
                        "MiB",
                        Map.of(
                                "server_rss_mib", "RSS",
                                "server_heap_used_mib", "heap used",
                                "server_heap_live_mib", "heap after full GC")));
        panels.add(
                panel(
                        curve,
                        "Open file descriptors and threads",
                        "count",
                        Map.of(
                                "server_fds", "kv-server fds",
                                "server_sst_fds", "kv-server .sst fds",
                                "server_threads", "kv-server threads",
                                "flink_fds", "Flink JVM fds")));
        panels.add(
                panel(
                        curve,
                        "Snapshots held on the kv-server",
                        "count",
                        Map.of(
                                "kv_snapshot_ids", "snapshot ids (per table)",
                                "per_shard", "shard snapshots per shard",
                                "flink_checkpoint_dirs", "Flink chk-* dirs")));
        panels.add(
                panel(
                        curve,
                        "kv-server data dir (MiB)",
                        "MiB",
                        Map.of(
                                "disk_mib", "on disk (du)",
                                "kv_snapshot_mib", "sum of snapshot sizes")));
        panels.add(
                panel(
                        curve,
                        "Job: records/s, checkpoint duration",
                        "records/s, ms",
                        Map.of(
                                "records_per_s", "records/s",
                                "last_checkpoint_ms", "last checkpoint (ms)")));
        panels.add(
                panel(
                        curve,
                        "Flink JVM (MiniCluster, keyed backends) memory (MiB)",
                        "MiB",
                        Map.of(
                                "flink_rss_mib", "RSS",
                                "flink_heap_used_mib", "heap used",
                                "flink_heap_live_mib", "heap after full GC")));
        BitmapEncoder.saveBitmap(panels, 3, 2, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    private static XYChart panel(
            SoakCurve curve, String title, String yTitle, Map<String, String> series) {
        XYChart chart =
                new XYChartBuilder()
                        .width(800)
                        .height(420)
                        .title(title)
                        .xAxisTitle("minutes since submission")
                        .yAxisTitle(yTitle)
                        .build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setPlotGridLinesColor(new Color(225, 225, 225));
        chart.getStyler().setMarkerSize(3);
        // Sorted so that the legend order is the same on every run.
        for (Map.Entry<String, String> s : new TreeMap<>(series).entrySet()) {
            List<Double> x = new ArrayList<>();
            List<Double> y = new ArrayList<>();
            for (int r = 0; r < curve.size(); r++) {
                if (curve.value(r, SoakCurve.RUNNING) != 1) {
                    continue;
                }
                double v =
                        s.getKey().equals("per_shard")
                                ? perShard(curve, r)
                                : curve.value(r, s.getKey());
                if (!Double.isNaN(v)) {
                    x.add(curve.value(r, SoakCurve.TIME) / 60);
                    y.add(v);
                }
            }
            if (!x.isEmpty()) {
                XYSeries added = chart.addSeries(s.getValue(), x, y);
                added.setMarker(SeriesMarkers.NONE);
            }
        }
        return chart;
    }

    private static double perShard(SoakCurve curve, int row) {
        double shards = curve.value(row, "kv_shards");
        return shards > 0 ? curve.value(row, "kv_shard_snapshots") / shards : Double.NaN;
    }

    private static String markdown(SoakCurve curve, List<SoakBounds.Check> checks, Properties run) {
        StringBuilder md = new StringBuilder();
        if (!run.isEmpty()) {
            md.append("| setting | value |\n|---|---|\n");
            new TreeMap<>(run)
                    .forEach(
                            (k, v) ->
                                    md.append("| ")
                                            .append(k)
                                            .append(" | ")
                                            .append(v)
                                            .append(" |\n"));
            md.append('\n');
        }
        String[][] columns = {
            {"t_s", "t (s)"},
            {"records_per_s", "records/s"},
            {"checkpoints_completed", "checkpoints"},
            {"last_checkpoint_ms", "last ckpt ms"},
            {"kv_snapshot_ids", "snapshot ids"},
            {"kv_shard_snapshots", "shard snapshots"},
            {"server_fds", "server fds"},
            {"server_sst_fds", ".sst fds"},
            {"server_threads", "server threads"},
            {"server_rss_mib", "server RSS MiB"},
            {"server_heap_live_mib", "server live heap MiB"},
            {"disk_mib", "data dir MiB"},
            {"flink_rss_mib", "Flink RSS MiB"},
            {"flink_heap_live_mib", "Flink live heap MiB"},
            {"load1", "load 1 min"},
        };
        StringBuilder header = new StringBuilder("|");
        StringBuilder rule = new StringBuilder("|");
        for (String[] c : columns) {
            header.append(' ').append(c[1]).append(" |");
            rule.append("--:|");
        }
        md.append(header).append('\n').append(rule).append('\n');
        int step = Math.max(1, (curve.size() - 1) / TABLE_ROWS);
        for (int r = 0; r < curve.size(); r++) {
            boolean lastRow = r == curve.size() - 1;
            if (r % step != 0 && !lastRow) {
                continue;
            }
            md.append('|');
            for (String[] c : columns) {
                String cell = SoakCurve.format(curve.value(r, c[0]));
                if (c[0].equals(SoakCurve.TIME) && curve.value(r, SoakCurve.RUNNING) != 1) {
                    cell += " (ended)";
                }
                md.append(' ').append(cell.isEmpty() ? "–" : cell).append(" |");
            }
            md.append('\n');
        }
        md.append("\n| bound | measured | limit | |\n|---|---|---|---|\n");
        for (SoakBounds.Check check : checks) {
            md.append(
                    String.format(
                            Locale.ROOT,
                            "| %s | %s | %s | %s |%n",
                            check.what(),
                            check.measured(),
                            check.bound(),
                            check.measured().equals("not measured")
                                    ? "–"
                                    : check.holds() ? "holds" : "**violated**"));
        }
        return md.toString();
    }
}
