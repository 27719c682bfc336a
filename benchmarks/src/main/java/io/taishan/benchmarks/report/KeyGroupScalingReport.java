package io.taishan.benchmarks.report;

import io.taishan.benchmarks.keygroups.CellResult;
import io.taishan.benchmarks.keygroups.CellResult.PhaseResult;
import io.taishan.benchmarks.keygroups.CellResult.Repetition;
import io.taishan.benchmarks.keygroups.Footprint;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The report of {@code bin/taishan-keygroup-scaling}: reads every cell's JSON ({@link CellResult})
 * and writes them together as {@code results.json}, Markdown tables as {@code report.md} and a PNG
 * chart of every timed phase and the footprint against key groups, {@code keygroup-scaling.png}.
 *
 * <p>A figure is the median of a cell's measured repetitions (the warm-up left out) with their
 * maximum; a cell that stopped before its first measured repetition shows the warm-up's figure,
 * marked. A phase that failed or timed out without a figure shows as such, with its reason in the
 * notes. Nothing is filled in or extrapolated.
 */
public final class KeyGroupScalingReport {
    private static final List<String> BACKEND_ORDER = List.of("TAISHAN", "ROCKSDB", "HASHMAP");
    private static final double MIB = 1 << 20;
    private static final String WARM_UP_ONLY = "†";
    private static final int PANEL_WIDTH = 560;
    private static final int PANEL_HEIGHT = 420;

    /** The timed phases of the tables and the chart, with their headings. */
    private static final Map<String, String> TIMED = new LinkedHashMap<>();

    static {
        TIMED.put(CellResult.CHECKPOINT, "first checkpoint ms");
        TIMED.put(CellResult.INCREMENTAL_CHECKPOINT, "incremental checkpoint ms");
        TIMED.put(CellResult.RESTORE, "restore ms");
        TIMED.put(CellResult.RESCALE, "rescale restore ms");
    }

    private static final List<String> RPC_PHASES =
            List.of(
                    CellResult.OPEN,
                    CellResult.CHECKPOINT,
                    CellResult.INCREMENTAL_CHECKPOINT,
                    CellResult.RESTORE,
                    CellResult.RESCALE);

    private final List<CellResult> cells;
    private final StringBuilder md = new StringBuilder();
    private final List<String> notes = new ArrayList<>();

    KeyGroupScalingReport(List<CellResult> cells) {
        this.cells =
                cells.stream()
                        .sorted(
                                Comparator.comparingInt((CellResult c) -> order(c.backend()))
                                        .thenComparingInt(CellResult::parallelism)
                                        .thenComparingInt(CellResult::keyGroups))
                        .toList();
    }

    public static void main(String[] args) throws IOException {
        Path cellsDir = null;
        Path machine = null;
        Path out = Path.of(".");
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--cells" -> cellsDir = Path.of(args[i + 1]);
                case "--machine" -> machine = Path.of(args[i + 1]);
                case "--out" -> out = Path.of(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (cellsDir == null) {
            throw new IllegalArgumentException("--cells DIR is required");
        }
        List<CellResult> cells = CellResult.readAll(cellsDir);
        Files.createDirectories(out);
        Files.writeString(out.resolve("results.json"), CellResult.toJson(cells));
        KeyGroupScalingReport report = new KeyGroupScalingReport(cells);
        String machineText =
                machine != null && Files.exists(machine) ? Files.readString(machine) : null;
        Path chart = out.resolve("keygroup-scaling.png");
        report.render(machineText, chart);
        Files.writeString(out.resolve("report.md"), report.md.toString());
        System.out.print(report.md);
    }

    void render(String machine, Path chart) throws IOException {
        line("# Key-group scaling: what one keyed operator costs against its key groups");
        line("");
        if (cells.isEmpty()) {
            line("No cell produced a result.");
            return;
        }
        CellResult any = cells.get(0);
        CellResult.Settings s = any.settings();
        line(
                "Data, the same in every cell: %s. Every repetition on a fresh backend (Taishan: a"
                        + " new table on one kv-server child JVM per cell, which its repetitions"
                        + " share as they share the cell's JVM; a repetition drops its table at its"
                        + " end); %d repetition%s per cell%s. Each figure is"
                        + " the median of the measured repetitions, the maximum in brackets;"
                        + " %s marks a figure from the warm-up alone (the cell stopped before a"
                        + " measured one). Phase timeout %d s. What each phase measures:"
                        + " `benchmarks/README.md`.",
                any.data(),
                s.repetitions(),
                s.repetitions() == 1 ? "" : "s",
                s.repetitions() > 1 ? ", the first a warm-up left out" : "",
                WARM_UP_ONLY,
                s.phaseTimeoutSeconds());
        line("");
        mainTable();
        growth();
        versusRocksDb();
        footprintByPhase();
        rpcsByPhase();
        otherTimes();
        chart(chart);
        if (!notes.isEmpty()) {
            line("## Notes");
            line("");
            for (int i = 0; i < notes.size(); i++) {
                line("%d. %s", i + 1, notes.get(i));
            }
            line("");
        }
        line("## Cells: machine load and duration");
        line("");
        line("| backend | key groups | subtasks | load average at start → end | s | outcome |");
        line("|---|--:|--:|---|--:|---|");
        for (CellResult c : cells) {
            line(
                    "| %s | %,d | %d | %s → %s | %.0f | %s |",
                    name(c.backend()),
                    c.keyGroups(),
                    c.parallelism(),
                    c.loadAverageStart(),
                    c.loadAverageEnd(),
                    c.seconds(),
                    c.failure() == null ? "ok" : escape(c.failure()));
        }
        line("");
        if (machine != null) {
            line("## Machine and run");
            line("");
            line("```");
            md.append(machine.endsWith("\n") ? machine : machine + "\n");
            line("```");
            line("");
        }
    }

    // ---- tables

    private void mainTable() {
        line("## Times, footprint and server calls");
        line("");
        line(
                "Footprint: the peak over the phases of the process that holds the state (Taishan:"
                        + " the kv-server child JVM; RocksDB and HashMap: the task JVM itself, here"
                        + " the benchmark's) and of its data directory (Taishan: the kv-server's;"
                        + " RocksDB: its local working directory; HashMap: none). RPCs: the"
                        + " backend's `taishan.rpc.*` counts of open, first checkpoint,"
                        + " incremental checkpoint, restore and rescale restore.");
        line("");
        StringBuilder header =
                new StringBuilder("| backend | key groups | subtasks | open ms | ready ms |");
        StringBuilder rule = new StringBuilder("|---|--:|--:|--:|--:|");
        for (Map.Entry<String, String> phase : TIMED.entrySet()) {
            header.append(' ')
                    .append(
                            phase.getKey().equals(CellResult.RESCALE)
                                    ? "rescale restore ms (" + rescales() + ")"
                                    : phase.getValue())
                    .append(" |");
            rule.append("--:|");
        }
        header.append(" fds | RSS MiB | disk MiB | files | RPCs open / cp / incr / restore /");
        header.append(" rescale | outcome |");
        rule.append("--:|--:|--:|--:|--:|---|");
        line(header.toString());
        line(rule.toString());
        for (CellResult c : cells) {
            StringBuilder row =
                    new StringBuilder(
                            String.format(
                                    Locale.ROOT,
                                    "| %s | %,d | %d | ",
                                    name(c.backend()),
                                    c.keyGroups(),
                                    c.parallelism()));
            row.append(time(c, CellResult.OPEN, r -> r.parts().getOrDefault("create", nan())))
                    .append(" | ");
            row.append(time(c, CellResult.OPEN, PhaseResult::millis)).append(" | ");
            for (String phase : TIMED.keySet()) {
                row.append(time(c, phase, PhaseResult::millis)).append(" | ");
            }
            row.append(peak(c, f -> f.openFiles(), 1, "%,.0f")).append(" | ");
            row.append(peak(c, f -> f.rssBytes(), MIB, "%,.0f")).append(" | ");
            boolean hasDir = !c.backend().equals("HASHMAP");
            row.append(hasDir ? peak(c, f -> f.diskBytes(), MIB, "%,.1f") : "–").append(" | ");
            row.append(hasDir ? peak(c, f -> f.files(), 1, "%,.0f") : "–").append(" | ");
            List<String> rpcs = new ArrayList<>();
            if (!hasServer(c)) {
                row.append("– (no server) | ").append(outcome(c)).append(" |");
                line(row.toString());
                continue;
            }
            for (String phase : RPC_PHASES) {
                Fig v = figure(c, phase, r -> (double) r.rpcTotal());
                rpcs.add(
                        v.isPresent()
                                ? String.format(Locale.ROOT, "%,.0f", v.get())
                                        + (v.mark().isEmpty() ? "" : " " + v.mark())
                                : "–");
            }
            row.append(String.join(" / ", rpcs)).append(" | ").append(outcome(c)).append(" |");
            line(row.toString());
        }
        line("");
    }

    private void growth() {
        line("## Growth with key groups (median at the most key groups ÷ at the fewest)");
        line("");
        line(
                "| backend | subtasks | key groups | open | ready | checkpoint | incremental |"
                        + " restore | rescale | peak fds | peak RSS | peak files |");
        line("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
        for (String backend : backends()) {
            for (int p : parallelisms()) {
                List<CellResult> row =
                        cells.stream()
                                .filter(c -> c.backend().equals(backend) && c.parallelism() == p)
                                .toList();
                if (row.size() < 2) {
                    continue;
                }
                List<String> columns = new ArrayList<>();
                columns.add(growth(row, c -> figure(c, CellResult.OPEN, create())));
                for (String phase :
                        List.of(
                                CellResult.OPEN,
                                CellResult.CHECKPOINT,
                                CellResult.INCREMENTAL_CHECKPOINT,
                                CellResult.RESTORE,
                                CellResult.RESCALE)) {
                    columns.add(growth(row, c -> figure(c, phase, PhaseResult::millis)));
                }
                columns.add(growth(row, c -> peakValue(c, f -> f.openFiles())));
                columns.add(growth(row, c -> peakValue(c, f -> f.rssBytes())));
                columns.add(
                        backend.equals("HASHMAP")
                                ? "–"
                                : growth(row, c -> peakValue(c, f -> f.files())));
                line(
                        "| %s | %d | %,d → %,d | %s |",
                        name(backend),
                        p,
                        row.get(0).keyGroups(),
                        row.get(row.size() - 1).keyGroups(),
                        String.join(" | ", columns));
            }
        }
        line("");
        line(
                "Each ratio is between the fewest and the most key groups at which that figure"
                        + " exists; one that ends short of the row's most (the cell failed there)"
                        + " says where it ends.");
        line("");
    }

    /** The figure's growth along {@code row}, ascending key groups, over the cells that have it. */
    private static String growth(
            List<CellResult> row, java.util.function.Function<CellResult, Fig> figure) {
        List<CellResult> with = row.stream().filter(c -> figure.apply(c).isPresent()).toList();
        if (with.size() < 2) {
            return "–";
        }
        CellResult high = with.get(with.size() - 1);
        String ratio = ratio(figure.apply(with.get(0)), figure.apply(high));
        return high == row.get(row.size() - 1)
                ? ratio
                : String.format(Locale.ROOT, "%s (to %,d)", ratio, high.keyGroups());
    }

    private void versusRocksDb() {
        if (!backends().contains("TAISHAN") || !backends().contains("ROCKSDB")) {
            return;
        }
        line("## Taishan ÷ RocksDB (medians; 1 = as fast, 10 = ten times RocksDB's time)");
        line("");
        line(
                "| key groups | subtasks | open | ready | checkpoint | incremental | restore |"
                        + " rescale |");
        line("|--:|--:|--:|--:|--:|--:|--:|--:|");
        for (int p : parallelisms()) {
            for (int kg : keyGroups()) {
                Optional<CellResult> t = cell("TAISHAN", kg, p);
                Optional<CellResult> r = cell("ROCKSDB", kg, p);
                if (t.isEmpty() || r.isEmpty()) {
                    continue;
                }
                StringBuilder line =
                        new StringBuilder(String.format(Locale.ROOT, "| %,d | %d | ", kg, p));
                line.append(
                                ratio(
                                        figure(r.get(), CellResult.OPEN, create()),
                                        figure(t.get(), CellResult.OPEN, create())))
                        .append(" | ");
                for (String phase :
                        List.of(
                                CellResult.OPEN,
                                CellResult.CHECKPOINT,
                                CellResult.INCREMENTAL_CHECKPOINT,
                                CellResult.RESTORE,
                                CellResult.RESCALE)) {
                    line.append(
                                    ratio(
                                            figure(r.get(), phase, PhaseResult::millis),
                                            figure(t.get(), phase, PhaseResult::millis)))
                            .append(" | ");
                }
                line(line.toString().stripTrailing());
            }
        }
        line("");
    }

    private void footprintByPhase() {
        line("## Footprint after each phase (medians: fds / RSS MiB / disk MiB / files)");
        line("");
        List<String> phases = phasesWithFootprint();
        line("| backend | key groups | subtasks | " + String.join(" | ", phases) + " |");
        line("|---|--:|--:|" + "--:|".repeat(phases.size()));
        for (CellResult c : cells) {
            StringBuilder row =
                    new StringBuilder(
                            String.format(
                                    Locale.ROOT,
                                    "| %s | %,d | %d |",
                                    name(c.backend()),
                                    c.keyGroups(),
                                    c.parallelism()));
            for (String phase : phases) {
                OptionalDouble fds = median(footprints(c, phase, f -> f.openFiles()));
                if (fds.isEmpty()) {
                    row.append(" – |");
                    continue;
                }
                row.append(
                        String.format(
                                Locale.ROOT,
                                " %,.0f / %,.0f / %s / %s |",
                                fds.getAsDouble(),
                                median(footprints(c, phase, f -> f.rssBytes())).orElse(0) / MIB,
                                c.backend().equals("HASHMAP")
                                        ? "–"
                                        : String.format(
                                                Locale.ROOT,
                                                "%,.1f",
                                                median(footprints(c, phase, f -> f.diskBytes()))
                                                                .orElse(0)
                                                        / MIB),
                                c.backend().equals("HASHMAP")
                                        ? "–"
                                        : String.format(
                                                Locale.ROOT,
                                                "%,.0f",
                                                median(footprints(c, phase, f -> f.files()))
                                                        .orElse(0))));
            }
            line(row.toString());
        }
        line("");
    }

    private void rpcsByPhase() {
        List<CellResult> withRpcs =
                cells.stream().filter(KeyGroupScalingReport::hasServer).toList();
        if (withRpcs.isEmpty()) {
            return;
        }
        line("## Server calls by kind and phase (medians of the measured repetitions)");
        line("");
        List<String> phases =
                List.of(
                        CellResult.OPEN,
                        CellResult.LOAD,
                        CellResult.CHECKPOINT,
                        CellResult.CHANGE,
                        CellResult.INCREMENTAL_CHECKPOINT,
                        CellResult.FAILOVER,
                        CellResult.RESTORE,
                        CellResult.RESCALE);
        line("| backend | key groups | subtasks | " + String.join(" | ", phases) + " |");
        line("|---|--:|--:|" + "---|".repeat(phases.size()));
        for (CellResult c : withRpcs) {
            StringBuilder row =
                    new StringBuilder(
                            String.format(
                                    Locale.ROOT,
                                    "| %s | %,d | %d |",
                                    name(c.backend()),
                                    c.keyGroups(),
                                    c.parallelism()));
            for (String phase : phases) {
                Set<String> kinds = new LinkedHashSet<>();
                for (PhaseResult r : results(c, phase)) {
                    kinds.addAll(r.rpcs().keySet());
                }
                List<String> parts = new ArrayList<>();
                for (String kind : kinds.stream().sorted().toList()) {
                    OptionalDouble v =
                            median(values(c, phase, r -> (double) r.rpcs().getOrDefault(kind, 0L)));
                    if (v.isPresent() && v.getAsDouble() > 0) {
                        parts.add(String.format(Locale.ROOT, "%s %,.0f", kind, v.getAsDouble()));
                    }
                }
                row.append(' ')
                        .append(parts.isEmpty() ? "–" : String.join(", ", parts))
                        .append(" |");
            }
            line(row.toString());
        }
        line("");
    }

    private void otherTimes() {
        line("## Around the timed phases (medians, ms unless marked)");
        line("");
        line(
                "`load`: writing the data set; `change`: writing the change set; `sync`: until"
                        + " `snapshot(...)` returned; `notify`: the JobManager's and the tasks' work"
                        + " after a checkpoint completed (shared state registered, tasks notified,"
                        + " the subsumed checkpoint discarded); `failover`: disposing the writing"
                        + " subtasks; `verify`: checking the sample after a restore; `start`:"
                        + " starting the backend (Taishan: the cell's kv-server child JVM, in the warm-up; later repetitions find it running). Sizes: the"
                        + " checkpoint handles' state size and incremental (checkpointed) size,"
                        + " and the checkpoint directory after the incremental checkpoint.");
        line("");
        line(
                "| backend | key groups | subtasks | start | load | change | cp sync | cp notify |"
                        + " incr sync | incr notify | failover | restore verify | rescale verify |"
                        + " cp KiB | incr KiB (incremental) | checkpoint dir KiB / files |");
        line("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
        for (CellResult c : cells) {
            line(
                    "| %s | %,d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s /"
                            + " %s | %s / %s |",
                    name(c.backend()),
                    c.keyGroups(),
                    c.parallelism(),
                    plain(c, CellResult.START, PhaseResult::millis),
                    plain(c, CellResult.LOAD, PhaseResult::millis),
                    plain(c, CellResult.CHANGE, PhaseResult::millis),
                    plain(c, CellResult.CHECKPOINT, part("sync")),
                    plain(c, CellResult.CHECKPOINT, part("notify")),
                    plain(c, CellResult.INCREMENTAL_CHECKPOINT, part("sync")),
                    plain(c, CellResult.INCREMENTAL_CHECKPOINT, part("notify")),
                    plain(c, CellResult.FAILOVER, PhaseResult::millis),
                    plain(c, CellResult.RESTORE, part("verify")),
                    plain(c, CellResult.RESCALE, part("verify")),
                    kib(c, CellResult.CHECKPOINT, "stateSize"),
                    kib(c, CellResult.INCREMENTAL_CHECKPOINT, "stateSize"),
                    kib(c, CellResult.INCREMENTAL_CHECKPOINT, "checkpointedSize"),
                    kib(c, CellResult.INCREMENTAL_CHECKPOINT, "checkpointDirBytes"),
                    count(c, CellResult.INCREMENTAL_CHECKPOINT, "checkpointDirFiles"));
        }
        line("");
    }

    // ---- chart

    private void chart(Path file) throws IOException {
        List<XYChart> panels = new ArrayList<>();
        panels.add(panel("open ms (createKeyedStateBackend)", CellResult.OPEN, create()));
        panels.add(panel("ready ms (open + first access)", CellResult.OPEN, PhaseResult::millis));
        for (Map.Entry<String, String> phase : TIMED.entrySet()) {
            panels.add(panel(phase.getValue(), phase.getKey(), PhaseResult::millis));
        }
        panels.add(footprintPanel("peak open fds", f -> f.openFiles(), 1));
        panels.add(footprintPanel("peak RSS MiB", f -> f.rssBytes(), MIB));
        panels.add(footprintPanel("peak data-dir files", f -> f.files(), 1));
        panels.removeIf(p -> p.getSeriesMap().isEmpty());
        if (panels.isEmpty()) {
            return;
        }
        ChartSheet.write(panels, 3, PANEL_WIDTH, PANEL_HEIGHT, file);
        line("## Chart");
        line("");
        line(
                "Medians against key groups, both axes logarithmic. A cell that stopped in its"
                        + " measured repetitions is drawn from its warm-up (marked † in the"
                        + " tables); a missing point is a phase that no repetition of the cell"
                        + " passed.");
        line("");
        line("![key-group scaling](%s)", file.getFileName());
        line("");
    }

    private XYChart panel(String title, String phase, ToDoubleFunction<PhaseResult> value) {
        XYChart chart = newPanel(title);
        for (String backend : backends()) {
            for (int p : parallelisms()) {
                List<Double> x = new ArrayList<>();
                List<Double> y = new ArrayList<>();
                for (CellResult c : cells) {
                    if (c.backend().equals(backend) && c.parallelism() == p) {
                        Fig v = figure(c, phase, value);
                        if (v.isPresent() && v.get() > 0) {
                            x.add(log2(c.keyGroups()));
                            y.add(v.get());
                        }
                    }
                }
                addSeries(chart, backend, p, x, y);
            }
        }
        return chart;
    }

    private XYChart footprintPanel(String title, ToDoubleFunction<Footprint> value, double unit) {
        XYChart chart = newPanel(title);
        for (String backend : backends()) {
            if (title.contains("files") && backend.equals("HASHMAP")) {
                continue;
            }
            for (int p : parallelisms()) {
                List<Double> x = new ArrayList<>();
                List<Double> y = new ArrayList<>();
                for (CellResult c : cells) {
                    if (c.backend().equals(backend) && c.parallelism() == p) {
                        Fig v = peakValue(c, value);
                        if (v.isPresent() && v.get() > 0) {
                            x.add(log2(c.keyGroups()));
                            y.add(v.get() / unit);
                        }
                    }
                }
                addSeries(chart, backend, p, x, y);
            }
        }
        return chart;
    }

    private XYChart newPanel(String title) {
        XYChart chart =
                new XYChartBuilder()
                        .width(PANEL_WIDTH)
                        .height(PANEL_HEIGHT)
                        .title(title)
                        .xAxisTitle("key groups (log scale)")
                        .build();
        // Key groups are powers of two: a linear axis of their log2, labelled with the counts.
        List<Integer> counts = keyGroups();
        chart.getStyler()
                .setxAxisTickLabelsFormattingFunction(
                        x ->
                                Math.abs(x - Math.rint(x)) < 1e-9 && x >= 0 && x < 31
                                        ? String.format(Locale.ROOT, "%,d", 1 << (int) Math.rint(x))
                                        : " ")
                // Whole powers of two at both ends: XChart sizes the axis by their labels.
                .setXAxisMin(Math.floor(log2(counts.get(0))) - 1)
                .setXAxisMax(Math.ceil(log2(counts.get(counts.size() - 1))) + 1)
                .setYAxisLogarithmic(true)
                .setLegendPosition(Styler.LegendPosition.OutsideS)
                .setLegendLayout(Styler.LegendLayout.Horizontal)
                .setChartBackgroundColor(Color.WHITE)
                .setMarkerSize(7);
        return chart;
    }

    private void addSeries(XYChart chart, String backend, int p, List<Double> x, List<Double> y) {
        if (x.isEmpty()) {
            return;
        }
        String name = name(backend) + (parallelisms().size() > 1 ? " ×" + p : "");
        XYSeries series = chart.addSeries(name, x, y);
        series.setMarker(p == 1 ? SeriesMarkers.CIRCLE : SeriesMarkers.DIAMOND);
    }

    // ---- figures

    /** The results of {@code phase} in the measured repetitions, or the warm-up if none. */
    private static List<PhaseResult> results(CellResult c, String phase) {
        List<PhaseResult> measured = phaseResults(c, phase, false);
        return measured.isEmpty() ? phaseResults(c, phase, true) : measured;
    }

    private static boolean warmUpOnly(CellResult c, String phase) {
        return phaseResults(c, phase, false).isEmpty() && !phaseResults(c, phase, true).isEmpty();
    }

    private static List<PhaseResult> phaseResults(CellResult c, String phase, boolean warmUp) {
        List<PhaseResult> found = new ArrayList<>();
        for (Repetition r : c.repetitions()) {
            if (r.warmUp() != warmUp) {
                continue;
            }
            for (PhaseResult p : r.phases()) {
                if (p.phase().equals(phase) && p.ok()) {
                    found.add(p);
                }
            }
        }
        return found;
    }

    private static List<Double> values(
            CellResult c, String phase, ToDoubleFunction<PhaseResult> value) {
        return results(c, phase).stream()
                .mapToDouble(value)
                .filter(v -> !Double.isNaN(v))
                .boxed()
                .toList();
    }

    private static List<Double> footprints(
            CellResult c, String phase, ToDoubleFunction<Footprint> value) {
        return results(c, phase).stream()
                .filter(r -> r.footprint() != null)
                .mapToDouble(r -> value.applyAsDouble(r.footprint()))
                .filter(v -> v >= 0)
                .boxed()
                .toList();
    }

    /** A figure and how it came about: {@code mark} is empty, {@value #WARM_UP_ONLY} or "≥". */
    private record Fig(OptionalDouble value, String mark) {
        boolean isPresent() {
            return value.isPresent();
        }

        double get() {
            return value.getAsDouble();
        }
    }

    private static Fig figure(CellResult c, String phase, ToDoubleFunction<PhaseResult> value) {
        return new Fig(median(values(c, phase, value)), warmUpOnly(c, phase) ? WARM_UP_ONLY : "");
    }

    /**
     * The median of each repetition's peak over its phases, over the measured repetitions that ran
     * every phase; else the warm-up's, if it ran every phase (marked {@value #WARM_UP_ONLY}); else
     * the highest of what ran before the cell stopped, marked "≥": the footprint of a repetition
     * cut short is a lower bound of what a whole one takes.
     */
    private static Fig peakValue(CellResult c, ToDoubleFunction<Footprint> value) {
        List<Repetition> measured =
                c.repetitions().stream().filter(r -> !r.warmUp() && complete(r)).toList();
        if (!measured.isEmpty()) {
            return new Fig(median(peaks(measured, value)), "");
        }
        List<Repetition> warmUp =
                c.repetitions().stream().filter(r -> r.warmUp() && complete(r)).toList();
        if (!warmUp.isEmpty()) {
            return new Fig(median(peaks(warmUp, value)), WARM_UP_ONLY);
        }
        OptionalDouble highest =
                peaks(c.repetitions(), value).stream().mapToDouble(Double::doubleValue).max();
        return new Fig(highest, "≥");
    }

    private static List<Double> peaks(
            List<Repetition> repetitions, ToDoubleFunction<Footprint> value) {
        List<Double> peaks = new ArrayList<>();
        for (Repetition r : repetitions) {
            r.phases().stream()
                    .filter(p -> p.footprint() != null)
                    .mapToDouble(p -> value.applyAsDouble(p.footprint()))
                    .filter(v -> v >= 0)
                    .max()
                    .ifPresent(peaks::add);
        }
        return peaks;
    }

    /** Whether a repetition ran every phase that has a footprint, through the rescaled restore. */
    private static boolean complete(Repetition r) {
        return r.phases().stream().allMatch(PhaseResult::ok)
                && r.phases().stream().anyMatch(p -> p.phase().equals(CellResult.RESCALE));
    }

    /** Whether the backend counted server calls at all: a backend with a server opens with some. */
    private static boolean hasServer(CellResult c) {
        return c.repetitions().stream()
                .flatMap(r -> r.phases().stream())
                .anyMatch(p -> !p.rpcs().isEmpty());
    }

    private static boolean hasFootprint(Repetition r) {
        return r.phases().stream().anyMatch(p -> p.footprint() != null);
    }

    private static OptionalDouble median(List<Double> values) {
        if (values.isEmpty()) {
            return OptionalDouble.empty();
        }
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return OptionalDouble.of(
                n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2);
    }

    /** "median (max)", the warm-up mark, or why there is no figure. */
    private String time(CellResult c, String phase, ToDoubleFunction<PhaseResult> value) {
        List<Double> v = values(c, phase, value);
        String failed = failure(c, phase);
        if (v.isEmpty()) {
            return failed == null ? "–" : failed;
        }
        double median = median(v).getAsDouble();
        double max = v.stream().mapToDouble(Double::doubleValue).max().getAsDouble();
        String text =
                v.size() == 1
                        ? number(median)
                        : String.format(Locale.ROOT, "%s (%s)", number(median), number(max));
        if (warmUpOnly(c, phase)) {
            text += " " + WARM_UP_ONLY;
        }
        return failed == null ? text : text + ", then " + failed;
    }

    private String plain(CellResult c, String phase, ToDoubleFunction<PhaseResult> value) {
        Fig v = figure(c, phase, value);
        return v.isPresent() ? number(v.get()) + (v.mark().isEmpty() ? "" : " " + v.mark()) : "–";
    }

    private static String kib(CellResult c, String phase, String size) {
        Fig v = figure(c, phase, r -> r.sizes().getOrDefault(size, -1L));
        return v.isPresent() && v.get() >= 0
                ? String.format(Locale.ROOT, "%,.1f", v.get() / 1024)
                : "–";
    }

    private static String count(CellResult c, String phase, String size) {
        Fig v = figure(c, phase, r -> r.sizes().getOrDefault(size, -1L));
        return v.isPresent() && v.get() >= 0 ? String.format(Locale.ROOT, "%,.0f", v.get()) : "–";
    }

    private String peak(CellResult c, ToDoubleFunction<Footprint> value, double unit, String fmt) {
        Fig v = peakValue(c, value);
        if (!v.isPresent()) {
            return "–";
        }
        String text = String.format(Locale.ROOT, fmt, v.get() / unit);
        return v.mark().equals("≥")
                ? "≥ " + text
                : v.mark().isEmpty() ? text : text + " " + v.mark();
    }

    /** "ok", or the phase where the cell stopped and how, with the note of its reason. */
    private String outcome(CellResult c) {
        for (Repetition r : c.repetitions()) {
            for (PhaseResult p : r.phases()) {
                if (!p.ok()) {
                    return p.phase() + ": " + failure(c, p.phase());
                }
            }
        }
        return "ok";
    }

    /** "failed (note n)" or "timed out (note n)" when the phase did not pass in some repetition. */
    private String failure(CellResult c, String phase) {
        for (Repetition r : c.repetitions()) {
            for (PhaseResult p : r.phases()) {
                if (p.phase().equals(phase) && !p.ok()) {
                    String note =
                            String.format(
                                    Locale.ROOT,
                                    "%s, %,d key groups, %d subtask%s, repetition %d%s: %s %s: %s",
                                    name(c.backend()),
                                    c.keyGroups(),
                                    c.parallelism(),
                                    c.parallelism() == 1 ? "" : "s",
                                    r.number(),
                                    r.warmUp() ? " (warm-up)" : "",
                                    phase,
                                    p.outcome(),
                                    escape(String.valueOf(p.reason())));
                    int index = notes.indexOf(note);
                    if (index < 0) {
                        notes.add(note);
                        index = notes.size() - 1;
                    }
                    return String.format(Locale.ROOT, "**%s** (note %d)", p.outcome(), index + 1);
                }
            }
        }
        return null;
    }

    private static ToDoubleFunction<PhaseResult> create() {
        return part("create");
    }

    private static ToDoubleFunction<PhaseResult> part(String name) {
        return r -> r.parts().getOrDefault(name, nan());
    }

    private static double nan() {
        return Double.NaN;
    }

    /** {@code other ÷ base}, carrying the marks of both figures. */
    private static String ratio(Fig base, Fig other) {
        if (!base.isPresent() || !other.isPresent() || base.get() <= 0) {
            return "–";
        }
        String marks = base.mark().equals(other.mark()) ? base.mark() : base.mark() + other.mark();
        return number(other.get() / base.get()) + "×" + (marks.isEmpty() ? "" : " " + marks);
    }

    private static double log2(int keyGroups) {
        return Math.log(keyGroups) / Math.log(2);
    }

    private static String number(double value) {
        return StateReport.number(value);
    }

    // ---- cells

    private Optional<CellResult> cell(String backend, int keyGroups, int parallelism) {
        return cells.stream()
                .filter(
                        c ->
                                c.backend().equals(backend)
                                        && c.keyGroups() == keyGroups
                                        && c.parallelism() == parallelism)
                .findFirst();
    }

    private List<String> backends() {
        return cells.stream().map(CellResult::backend).distinct().toList();
    }

    private List<Integer> parallelisms() {
        return cells.stream().map(CellResult::parallelism).distinct().sorted().toList();
    }

    private List<Integer> keyGroups() {
        return cells.stream().map(CellResult::keyGroups).distinct().sorted().toList();
    }

    private String rescales() {
        return String.join(
                ", ",
                cells.stream()
                        .map(c -> c.parallelism() + "→" + c.rescaleTo())
                        .distinct()
                        .sorted()
                        .toList());
    }

    private List<String> phasesWithFootprint() {
        List<String> phases = new ArrayList<>();
        for (String phase : CellResult.PHASES) {
            if (!phase.equals(CellResult.TEARDOWN)
                    && cells.stream().anyMatch(c -> !footprints(c, phase, f -> 0).isEmpty())) {
                phases.add(phase);
            }
        }
        return phases;
    }

    private static int order(String backend) {
        int i = BACKEND_ORDER.indexOf(backend);
        return i < 0 ? BACKEND_ORDER.size() : i;
    }

    private static String name(String backend) {
        return switch (backend) {
            case "TAISHAN" -> "Taishan";
            case "ROCKSDB" -> "RocksDB";
            case "HASHMAP" -> "HashMap";
            default -> backend;
        };
    }

    private static String escape(String text) {
        return text.replace("|", "\\|").replace("\n", " ");
    }

    private void line(String format, Object... args) {
        md.append(args.length == 0 ? format : String.format(Locale.ROOT, format, args))
                .append('\n');
    }
}
