package io.taishan.benchmarks.report;

import io.taishan.benchmarks.durable.DurableCheckpoints;
import io.taishan.benchmarks.keygroups.CellResult;
import io.taishan.benchmarks.keygroups.CellResult.PhaseResult;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.function.ToDoubleFunction;
import javax.annotation.Nullable;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Reads the cells of {@code bin/taishan-durable-checkpoints} ({@link DurableCheckpoints}), writes
 * them together as {@code results.json}, Markdown tables as {@code report.md} (every ratio is
 * Taishan ÷ RocksDB at the same state size, from the same run) and a PNG chart against state size,
 * {@code durable-checkpoints.png}. Nothing is filled in: a phase a cell did not pass shows as such.
 */
public final class DurableCheckpointsReport {
    private static final String TAISHAN = "TAISHAN_DURABLE";
    private static final String ROCKSDB = "ROCKSDB";
    private static final double MIB = 1 << 20;
    private static final double KIB = 1 << 10;
    private static final int PANEL_WIDTH = 560;
    private static final int PANEL_HEIGHT = 420;
    private static final Color TAISHAN_COLOR = new Color(0x1f, 0x5f, 0xd6);
    private static final Color TAISHAN_LOST_COLOR = new Color(0x6c, 0xb4, 0xee);
    private static final Color ROCKSDB_COLOR = new Color(0xf0, 0x9a, 0x00);

    private final List<CellResult> cells;
    private final StringBuilder md = new StringBuilder();

    DurableCheckpointsReport(List<CellResult> cells) {
        this.cells =
                cells.stream()
                        .sorted(
                                Comparator.comparingLong(DurableCheckpointsReport::stateBytes)
                                        .thenComparing(c -> c.backend().equals(TAISHAN) ? 0 : 1))
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
        DurableCheckpointsReport report = new DurableCheckpointsReport(cells);
        String machineText =
                machine != null && Files.exists(machine) ? Files.readString(machine) : null;
        report.render(machineText, out.resolve("durable-checkpoints.png"));
        Files.writeString(out.resolve("report.md"), report.md.toString());
        System.out.print(report.md);
    }

    void render(@Nullable String machine, Path chart) throws IOException {
        line("# Durable checkpoints against RocksDB incremental checkpoints");
        line("");
        if (cells.isEmpty()) {
            line("No cell produced a result.");
            return;
        }
        line(
                "Data: %s. One subtask, %d key groups; checkpoints to `file://` checkpoint"
                        + " storage on the local disk for both backends; the last checkpoint alone"
                        + " is retained (the subsumed one is discarded and the shared-state registry"
                        + " deletes what no longer is referenced). Taishan ÷ RocksDB is the ratio"
                        + " of the two backends at the same state size, measured in the same run;"
                        + " below 1 Taishan is faster or uploads less.",
                cells.get(0).data(), cells.get(0).keyGroups());
        line("");
        if (machine != null) {
            line("```");
            md.append(machine.strip()).append('\n');
            line("```");
            line("");
        }
        cellsTable();
        summary();
        perCheckpoint();
        restores();
        chart(chart);
    }

    // ---- tables

    private void cellsTable() {
        line("## Cells");
        line("");
        line("| cell | backend | started | load average at start | at end | seconds | outcome |");
        line("|---|---|---|---|---|---:|---|");
        for (CellResult c : cells) {
            line(
                    "| %s MiB | %s | %s | %s | %s | %.0f | %s |",
                    mib(c),
                    c.description().isEmpty() ? name(c.backend()) : escape(c.description()),
                    c.startedAt(),
                    c.loadAverageStart(),
                    c.loadAverageEnd(),
                    c.seconds(),
                    outcome(c));
        }
        line("");
    }

    private void summary() {
        line("## Taishan ÷ RocksDB");
        line("");
        line(
                "Incremental: the checkpoints after the first, their median and their sum (a"
                        + " compaction between two checkpoints makes one of them upload its output,"
                        + " so the sum shows what the median hides). Uploaded: the"
                        + " handles' checkpointed size (Flink's \"checkpointed data size\": for"
                        + " Taishan what the kv-server copied into `shared/` plus its metadata, for"
                        + " RocksDB the incremental handle's new files and metadata). Restore: until"
                        + " the subtask read one key back right. Taishan on the node that holds its"
                        + " files, then after that node was lost with its disk (an empty node on the"
                        + " same port); RocksDB downloads its files at every restore, the figure is"
                        + " the median of its two.");
        line("");
        line(
                "| state | first checkpoint ms (Taishan / RocksDB = ratio) | incremental checkpoint"
                        + " ms, median | incremental checkpoints ms, sum | uploaded per incremental"
                        + " checkpoint MiB, median | uploaded by the incremental checkpoints MiB, sum"
                        + " | Taishan RPCs per incremental checkpoint, median | restore ms, Taishan on"
                        + " the node that holds the files | restore ms, Taishan after node loss |");
        line("|---|---|---|---|---|---|---:|---|---|");
        for (long size : sizes()) {
            Optional<CellResult> t = cell(TAISHAN, size);
            Optional<CellResult> r = cell(ROCKSDB, size);
            double rocksRestore = median(r, restorePhases(), PhaseResult::millis);
            line(
                    "| %s MiB | %s | %s | %s | %s | %s | %s | %s | %s |",
                    size >> 20,
                    triple(
                            value(t, DurableCheckpoints.CHECKPOINT + 1, PhaseResult::millis),
                            value(r, DurableCheckpoints.CHECKPOINT + 1, PhaseResult::millis)),
                    triple(
                            median(t, incremental(t), PhaseResult::millis),
                            median(r, incremental(r), PhaseResult::millis)),
                    triple(
                            sum(t, incremental(t), PhaseResult::millis),
                            sum(r, incremental(r), PhaseResult::millis)),
                    triple(
                            median(t, incremental(t), size("checkpointedSize")) / MIB,
                            median(r, incremental(r), size("checkpointedSize")) / MIB),
                    triple(
                            sum(t, incremental(t), size("checkpointedSize")) / MIB,
                            sum(r, incremental(r), size("checkpointedSize")) / MIB),
                    count(median(t, incremental(t), p -> p.rpcTotal())),
                    triple(
                            value(t, DurableCheckpoints.RESTORE_LOCAL, PhaseResult::millis),
                            rocksRestore),
                    triple(
                            value(t, DurableCheckpoints.RESTORE_AFTER_LOSS, PhaseResult::millis),
                            rocksRestore));
        }
        line("");
    }

    private void perCheckpoint() {
        line("## Every checkpoint");
        line("");
        line(
                "Checkpoint 1 is the first (full) one, each later one follows a change round. ms:"
                        + " from `snapshot(...)` until the future's result (sync part in brackets)."
                        + " Uploaded: checkpointed size. New in storage: the files that appeared"
                        + " under the checkpoint directory during the checkpoint (bytes, files).");
        line("");
        for (long size : sizes()) {
            Optional<CellResult> t = cell(TAISHAN, size);
            Optional<CellResult> r = cell(ROCKSDB, size);
            line("### %d MiB", size >> 20);
            line("");
            line(
                    "| checkpoint | Taishan ms | RocksDB ms | ratio | Taishan uploaded KiB |"
                            + " RocksDB uploaded KiB | ratio | new in storage KiB (files),"
                            + " Taishan | RocksDB | Taishan RPCs | state MiB, Taishan / RocksDB |");
            line("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            int n = Math.max(checkpointPhases(t).size(), checkpointPhases(r).size());
            for (int i = 1; i <= n; i++) {
                String phase = DurableCheckpoints.CHECKPOINT + i;
                Optional<PhaseResult> tp = phase(t, phase);
                Optional<PhaseResult> rp = phase(r, phase);
                line(
                        "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |",
                        i,
                        timed(tp),
                        timed(rp),
                        ratio(millis(tp), millis(rp)),
                        number(sized(tp, "checkpointedSize") / KIB),
                        number(sized(rp, "checkpointedSize") / KIB),
                        ratio(sized(tp, "checkpointedSize"), sized(rp, "checkpointedSize")),
                        newInStorage(tp),
                        newInStorage(rp),
                        tp.map(p -> count(p.rpcTotal()) + " " + escape(p.rpcs().toString()))
                                .orElse("—"),
                        number(sized(tp, "stateSize") / MIB),
                        number(sized(rp, "stateSize") / MIB));
            }
            line("");
        }
    }

    private void restores() {
        line("## Restores");
        line("");
        line(
                "From the last checkpoint, on new subtasks. ms: until the subtask read one key"
                        + " back right (create: until `createKeyedStateBackend` returned).");
        line(
                "Downloaded: Taishan's `restoreDownloadedBytes` (what its node fetched from"
                        + " checkpoint storage); RocksDB: its handle's whole state size, which its"
                        + " restore copies into a fresh local directory every time. Then a sample of keys"
                        + " is checked against the data set (untimed).");
        line("");
        line(
                "| state | backend | restore | ms | create ms | downloaded MiB | RPCs | keys checked |");
        line("|---|---|---|---:|---:|---:|---|---:|");
        for (CellResult c : cells) {
            for (String phase : restorePhases()) {
                Optional<PhaseResult> p = phase(Optional.of(c), phase);
                String label =
                        c.backend().equals(ROCKSDB)
                                        && phase.equals(DurableCheckpoints.RESTORE_AFTER_LOSS)
                                ? "restore again (the same: downloads)"
                                : phase;
                line(
                        "| %s MiB | %s | %s | %s | %s | %s | %s | %s |",
                        mib(c),
                        name(c.backend()),
                        label,
                        timed(p),
                        number(
                                p.map(x -> x.parts().getOrDefault("create", Double.NaN))
                                        .orElse(Double.NaN)),
                        number(sized(p, DurableCheckpoints.DOWNLOADED_BYTES) / MIB),
                        p.map(x -> count(x.rpcTotal()) + " " + escape(x.rpcs().toString()))
                                .orElse("—"),
                        count(sized(p, "keysVerified")));
            }
        }
        line("");
    }

    // ---- chart

    private void chart(Path file) throws IOException {
        List<XYChart> panels = new ArrayList<>();
        panels.add(
                panel(
                        "first (full) checkpoint ms",
                        c ->
                                value(
                                        Optional.of(c),
                                        DurableCheckpoints.CHECKPOINT + 1,
                                        PhaseResult::millis),
                        null));
        panels.add(
                panel(
                        "incremental checkpoint ms (median)",
                        c ->
                                median(
                                        Optional.of(c),
                                        incremental(Optional.of(c)),
                                        PhaseResult::millis),
                        null));
        panels.add(
                panel(
                        "all incremental checkpoints ms (sum)",
                        c -> sum(Optional.of(c), incremental(Optional.of(c)), PhaseResult::millis),
                        null));
        panels.add(
                panel(
                        "uploaded per incremental checkpoint MiB (median)",
                        c ->
                                median(
                                                Optional.of(c),
                                                incremental(Optional.of(c)),
                                                size("checkpointedSize"))
                                        / MIB,
                        null));
        panels.add(
                panel(
                        "uploaded by all incremental checkpoints MiB (sum)",
                        c ->
                                sum(
                                                Optional.of(c),
                                                incremental(Optional.of(c)),
                                                size("checkpointedSize"))
                                        / MIB,
                        null));
        panels.add(
                panel(
                        "restore ms",
                        c ->
                                c.backend().equals(ROCKSDB)
                                        ? median(
                                                Optional.of(c),
                                                restorePhases(),
                                                PhaseResult::millis)
                                        : value(
                                                Optional.of(c),
                                                DurableCheckpoints.RESTORE_LOCAL,
                                                PhaseResult::millis),
                        c ->
                                c.backend().equals(ROCKSDB)
                                        ? Double.NaN
                                        : value(
                                                Optional.of(c),
                                                DurableCheckpoints.RESTORE_AFTER_LOSS,
                                                PhaseResult::millis)));
        panels.removeIf(p -> p.getSeriesMap().isEmpty());
        if (panels.isEmpty()) {
            return;
        }
        ChartSheet.write(panels, 3, PANEL_WIDTH, PANEL_HEIGHT, file);
        line("## Chart");
        line("");
        line("Against state size, both axes logarithmic.");
        line("");
        line("![durable checkpoints](%s)", file.getFileName());
        line("");
    }

    /**
     * One panel: {@code value} per backend against state size; {@code second}, if given, a second
     * series per backend (Taishan's restore after node loss).
     */
    private XYChart panel(
            String title,
            ToDoubleFunction<CellResult> value,
            @Nullable ToDoubleFunction<CellResult> second) {
        XYChart chart =
                new XYChartBuilder()
                        .width(PANEL_WIDTH)
                        .height(PANEL_HEIGHT)
                        .title(title)
                        .xAxisTitle("state MiB (log scale)")
                        .build();
        List<Long> sizes = sizes();
        chart.getStyler()
                .setxAxisTickLabelsFormattingFunction(
                        x ->
                                Math.abs(x - Math.rint(x)) < 1e-9 && x >= 0 && x < 40
                                        ? String.format(
                                                Locale.ROOT, "%,d", 1L << (int) Math.rint(x))
                                        : " ")
                .setXAxisMin(Math.floor(log2Mib(sizes.get(0))) - 1)
                .setXAxisMax(Math.ceil(log2Mib(sizes.get(sizes.size() - 1))) + 1)
                .setYAxisLogarithmic(true)
                .setLegendPosition(Styler.LegendPosition.OutsideS)
                .setLegendLayout(Styler.LegendLayout.Horizontal)
                .setChartBackgroundColor(Color.WHITE)
                .setMarkerSize(7);
        for (String backend : List.of(TAISHAN, ROCKSDB)) {
            series(chart, backend, value, second == null ? "" : ", node holds files");
            if (second != null && backend.equals(TAISHAN)) {
                series(chart, backend, second, ", after node loss");
            }
        }
        return chart;
    }

    private void series(
            XYChart chart, String backend, ToDoubleFunction<CellResult> value, String suffix) {
        List<Double> x = new ArrayList<>();
        List<Double> y = new ArrayList<>();
        for (CellResult c : cells) {
            if (c.backend().equals(backend)) {
                double v = value.applyAsDouble(c);
                if (!Double.isNaN(v) && v > 0) {
                    x.add(log2Mib(stateBytes(c)));
                    y.add(v);
                }
            }
        }
        if (!x.isEmpty()) {
            boolean rocksDb = backend.equals(ROCKSDB);
            boolean lost = suffix.contains("loss");
            XYSeries s = chart.addSeries(rocksDb ? "RocksDB" : "Taishan" + suffix, x, y);
            // One colour per backend in every panel; Taishan after node loss a lighter blue.
            Color color = rocksDb ? ROCKSDB_COLOR : lost ? TAISHAN_LOST_COLOR : TAISHAN_COLOR;
            s.setLineColor(color);
            s.setMarkerColor(color);
            s.setMarker(
                    rocksDb
                            ? SeriesMarkers.DIAMOND
                            : lost ? SeriesMarkers.SQUARE : SeriesMarkers.CIRCLE);
        }
    }

    /**
     * The cell's failure, or "ok" once it reached its teardown; a cell whose JVM ended before (the
     * run's time limit killed it) shows the last phase it finished.
     */
    private static String outcome(CellResult c) {
        if (c.failure() != null) {
            return escape(c.failure());
        }
        List<PhaseResult> phases = phases(Optional.of(c));
        if (!phases.isEmpty()
                && phases.get(phases.size() - 1).phase().equals(DurableCheckpoints.TEARDOWN)) {
            return "ok";
        }
        return "**incomplete**: the JVM ended after "
                + (phases.isEmpty() ? "no phase" : "phase " + phases.get(phases.size() - 1).phase())
                + " (killed at the run's time limit, or crashed: see its log)";
    }

    // ---- figures

    private static long stateBytes(CellResult c) {
        return (long) c.settings().keys() * c.settings().valueBytes();
    }

    private static long mib(CellResult c) {
        return stateBytes(c) >> 20;
    }

    private static double log2Mib(long bytes) {
        return Math.log(bytes / MIB) / Math.log(2);
    }

    private List<Long> sizes() {
        return cells.stream()
                .map(DurableCheckpointsReport::stateBytes)
                .distinct()
                .sorted()
                .toList();
    }

    private Optional<CellResult> cell(String backend, long size) {
        return cells.stream()
                .filter(c -> c.backend().equals(backend) && stateBytes(c) == size)
                .findFirst();
    }

    private static List<PhaseResult> phases(Optional<CellResult> c) {
        return c.map(
                        x ->
                                x.repetitions().isEmpty()
                                        ? List.<PhaseResult>of()
                                        : x.repetitions().get(0).phases())
                .orElse(List.of());
    }

    private static Optional<PhaseResult> phase(Optional<CellResult> c, String name) {
        return phases(c).stream().filter(p -> p.phase().equals(name) && p.ok()).findFirst();
    }

    private static List<String> checkpointPhases(Optional<CellResult> c) {
        return phases(c).stream()
                .map(PhaseResult::phase)
                .filter(name -> name.startsWith(DurableCheckpoints.CHECKPOINT))
                .toList();
    }

    /** The checkpoints after the first. */
    private static List<String> incremental(Optional<CellResult> c) {
        List<String> all = checkpointPhases(c);
        return all.isEmpty() ? all : all.subList(1, all.size());
    }

    private static List<String> restorePhases() {
        return List.of(DurableCheckpoints.RESTORE_LOCAL, DurableCheckpoints.RESTORE_AFTER_LOSS);
    }

    private static double value(
            Optional<CellResult> c, String name, ToDoubleFunction<PhaseResult> f) {
        return phase(c, name).map(f::applyAsDouble).orElse(Double.NaN);
    }

    private static double median(
            Optional<CellResult> c, List<String> names, ToDoubleFunction<PhaseResult> f) {
        List<Double> values = new ArrayList<>();
        for (String name : names) {
            double v = value(c, name, f);
            if (!Double.isNaN(v)) {
                values.add(v);
            }
        }
        OptionalDouble m = median(values);
        return m.isPresent() ? m.getAsDouble() : Double.NaN;
    }

    /** The sum over {@code names}; NaN if a cell misses one of them. */
    private static double sum(
            Optional<CellResult> c, List<String> names, ToDoubleFunction<PhaseResult> f) {
        double sum = names.isEmpty() ? Double.NaN : 0;
        for (String name : names) {
            sum += value(c, name, f);
        }
        return sum;
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

    private static ToDoubleFunction<PhaseResult> size(String name) {
        return p -> p.sizes().containsKey(name) ? p.sizes().get(name) : Double.NaN;
    }

    private static double sized(Optional<PhaseResult> p, String name) {
        return p.map(x -> size(name).applyAsDouble(x)).orElse(Double.NaN);
    }

    private static double millis(Optional<PhaseResult> p) {
        return p.map(PhaseResult::millis).orElse(Double.NaN);
    }

    private static String timed(Optional<PhaseResult> p) {
        return p.map(
                        x ->
                                number(x.millis())
                                        + (x.parts().containsKey("sync")
                                                ? " (" + number(x.parts().get("sync")) + ")"
                                                : ""))
                .orElse("—");
    }

    private static String newInStorage(Optional<PhaseResult> p) {
        return number(sized(p, DurableCheckpoints.NEW_BYTES) / KIB)
                + " ("
                + count(sized(p, DurableCheckpoints.NEW_FILES))
                + ")";
    }

    private static String triple(double taishan, double rocksDb) {
        return number(taishan) + " / " + number(rocksDb) + " = **" + ratio(taishan, rocksDb) + "**";
    }

    private static String ratio(double taishan, double rocksDb) {
        if (Double.isNaN(taishan) || Double.isNaN(rocksDb) || rocksDb == 0) {
            return "—";
        }
        return String.format(Locale.ROOT, "%.2f", taishan / rocksDb);
    }

    private static String number(double value) {
        return Double.isNaN(value) ? "—" : StateReport.number(value);
    }

    private static String count(double value) {
        return Double.isNaN(value) ? "—" : String.format(Locale.ROOT, "%,.0f", value);
    }

    private static String name(String backend) {
        return switch (backend) {
            case TAISHAN -> "Taishan (durable)";
            case ROCKSDB -> "RocksDB (incremental)";
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
