package io.taishan.benchmarks.report;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.CategorySeries;
import org.knowm.xchart.style.Styler;

/**
 * PNG charts of a {@link StateReport}'s results, drawn with XChart: throughput by backend for each
 * access pattern, and Taishan's throughput as a multiple of RocksDB's. Log scales: the backends
 * differ by up to four orders of magnitude. A benchmark missing for any backend of a chart is left
 * out of that chart rather than drawn as zero.
 */
final class StateCharts {
    private static final int WIDTH = 1400;
    private static final int HEIGHT = 700;

    private final StateReport report;

    StateCharts(StateReport report) {
        this.report = report;
    }

    /** Writes the charts into {@code dir}; returns their paths. */
    List<Path> write(Path dir) throws IOException {
        Files.createDirectories(dir);
        List<Path> written = new ArrayList<>();
        for (String access : report.accesses()) {
            throughput(access)
                    .ifPresent(chart -> written.add(save(chart, dir, "throughput-" + access, 0)));
        }
        vsRocksDb().ifPresent(chart -> written.add(save(chart, dir, "vs-rocksdb", 1.0)));
        return written;
    }

    private Optional<CategoryChart> throughput(String access) {
        List<String> variants = report.variants(b -> !b.equals(StateReport.RESTORE));
        List<String> benchmarks = complete(access, variants);
        if (benchmarks.isEmpty()) {
            return Optional.empty();
        }
        CategoryChart chart =
                chart(
                        "State operations per ms, "
                                + access.toLowerCase(Locale.ROOT)
                                + " access over "
                                + keys()
                                + " keys (log scale; higher is better)",
                        "ops/ms");
        for (String variant : variants) {
            List<Double> scores = new ArrayList<>();
            for (String benchmark : benchmarks) {
                scores.add(report.find(benchmark, access, variant).orElseThrow().score());
            }
            chart.addSeries(variant, benchmarks, scores);
        }
        return Optional.of(chart);
    }

    private Optional<CategoryChart> vsRocksDb() {
        List<String> accesses = report.accesses();
        List<String> benchmarks = null;
        List<String> series = new ArrayList<>();
        for (String access : accesses) {
            List<String> variants = new ArrayList<>();
            variants.add(StateReport.ROCKSDB);
            for (String variant : StateReport.TAISHAN_VARIANTS) {
                if (report.find("valueGet", access, variant).isPresent()
                        || report.find("valueUpdate", access, variant).isPresent()) {
                    variants.add(variant);
                }
            }
            if (variants.size() < 2) {
                continue;
            }
            List<String> complete = complete(access, variants);
            benchmarks =
                    benchmarks == null
                            ? complete
                            : benchmarks.stream().filter(complete::contains).toList();
            for (String variant : variants.subList(1, variants.size())) {
                series.add(access + "|" + variant);
            }
        }
        if (benchmarks == null || benchmarks.isEmpty() || series.isEmpty()) {
            return Optional.empty();
        }
        CategoryChart chart =
                chart(
                        "Taishan's throughput as a multiple of RocksDB's (log scale; top line 1 = as"
                                + " fast as RocksDB, 0.01 = 1%)",
                        "× RocksDB");
        for (String name : series) {
            String access = name.substring(0, name.indexOf('|'));
            String variant = name.substring(name.indexOf('|') + 1);
            List<Double> ratios = new ArrayList<>();
            for (String benchmark : benchmarks) {
                JmhResult taishan = report.find(benchmark, access, variant).orElseThrow();
                ratios.add(report.vsRocksDb(taishan).value().orElseThrow());
            }
            chart.addSeries(variant + ", " + access.toLowerCase(Locale.ROOT), benchmarks, ratios);
        }
        return Optional.of(chart);
    }

    /** The throughput benchmarks that every one of {@code variants} has for {@code access}. */
    private List<String> complete(String access, List<String> variants) {
        return report.throughputBenchmarks().stream()
                .filter(b -> variants.stream().allMatch(v -> report.find(b, access, v).isPresent()))
                .toList();
    }

    private String keys() {
        return report.results().stream()
                .map(r -> String.format(Locale.ROOT, "%,d", r.setupKeyCount()))
                .distinct()
                .reduce((a, b) -> a + "/" + b)
                .orElse("?");
    }

    private static CategoryChart chart(String title, String yTitle) {
        CategoryChart chart =
                new CategoryChartBuilder()
                        .width(WIDTH)
                        .height(HEIGHT)
                        .title(title)
                        .xAxisTitle("benchmark")
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

    /** {@code atLeast}: a value the y axis must show (1 = as fast as RocksDB). */
    private static Path save(CategoryChart chart, Path dir, String name, double atLeast) {
        // Bars start at the axis minimum, which a log axis must be given: whole decades.
        double min = Double.MAX_VALUE;
        double max = atLeast;
        for (CategorySeries series : chart.getSeriesMap().values()) {
            for (Number number : series.getYData()) {
                double y = number.doubleValue();
                min = Math.min(min, y);
                max = Math.max(max, y);
            }
        }
        chart.getStyler()
                .setYAxisMin(Math.pow(10, Math.floor(Math.log10(min))))
                .setYAxisMax(Math.pow(10, Math.ceil(Math.log10(max))));
        Path file = dir.resolve("state-bench-" + name.toLowerCase(Locale.ROOT) + ".png");
        try {
            BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return file;
    }
}
