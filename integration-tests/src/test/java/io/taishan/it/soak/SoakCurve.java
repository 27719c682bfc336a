package io.taishan.it.soak;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The curves of one soak run as the CSV holds them: named numeric columns, one row per sample,
 * {@code NaN} where a figure could not be measured. The bounds and the report both read it, from
 * memory during the run or from the CSV afterwards, so they judge exactly what the CSV says.
 */
public final class SoakCurve {
    /** Seconds since the job was submitted. */
    public static final String TIME = "t_s";

    /** 1 while the job runs, 0 for the sample taken after it ended. */
    public static final String RUNNING = "running";

    private final List<String> columns;
    private final List<double[]> rows = new ArrayList<>();

    public SoakCurve(List<String> columns) {
        if (!columns.contains(TIME) || !columns.contains(RUNNING)) {
            throw new IllegalArgumentException("a soak curve needs " + TIME + " and " + RUNNING);
        }
        this.columns = List.copyOf(columns);
    }

    public static SoakCurve read(Path csv) throws IOException {
        List<String> lines = Files.readAllLines(csv);
        SoakCurve curve = new SoakCurve(Arrays.asList(lines.get(0).split(",")));
        for (String line : lines.subList(1, lines.size())) {
            if (line.isBlank()) {
                continue;
            }
            String[] cells = line.split(",", -1);
            double[] row = new double[curve.columns.size()];
            for (int i = 0; i < row.length; i++) {
                row[i] =
                        i < cells.length && !cells[i].isEmpty()
                                ? Double.parseDouble(cells[i])
                                : Double.NaN;
            }
            curve.rows.add(row);
        }
        return curve;
    }

    public List<String> columns() {
        return columns;
    }

    public String csvHeader() {
        return String.join(",", columns);
    }

    /** Adds a row; a column missing from {@code sample} is {@code NaN}. Returns its CSV line. */
    public String append(Map<String, Double> sample) {
        for (String name : sample.keySet()) {
            if (!columns.contains(name)) {
                throw new IllegalArgumentException("unknown soak column " + name);
            }
        }
        double[] row = new double[columns.size()];
        StringBuilder line = new StringBuilder();
        for (int i = 0; i < row.length; i++) {
            Double value = sample.get(columns.get(i));
            row[i] = value == null ? Double.NaN : value;
            if (i > 0) {
                line.append(',');
            }
            line.append(format(row[i]));
        }
        rows.add(row);
        return line.toString();
    }

    public int size() {
        return rows.size();
    }

    /** NaN for a column this curve does not have (a CSV of an earlier version of the sampler). */
    public double value(int row, String column) {
        int c = columns.indexOf(column);
        return c < 0 ? Double.NaN : rows.get(row)[c];
    }

    /** The run's length: the time of its last sample while the job ran. */
    public double runSeconds() {
        double last = 0;
        for (int r = 0; r < rows.size(); r++) {
            if (value(r, RUNNING) == 1) {
                last = value(r, TIME);
            }
        }
        return last;
    }

    /** Indices of the samples taken while the job ran with {@code from <= t < to}. */
    public List<Integer> runningBetween(double from, double to) {
        List<Integer> result = new ArrayList<>();
        for (int r = 0; r < rows.size(); r++) {
            double t = value(r, TIME);
            if (value(r, RUNNING) == 1 && t >= from && t < to) {
                result.add(r);
            }
        }
        return result;
    }

    /** The measured (non-NaN) values of a column at those samples. */
    public double[] values(String column, List<Integer> at) {
        return at.stream()
                .mapToDouble(r -> value(r, column))
                .filter(v -> !Double.isNaN(v))
                .toArray();
    }

    public static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int mid = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    }

    public static double max(double[] values) {
        return Arrays.stream(values).max().orElse(Double.NaN);
    }

    /**
     * About {@code points} evenly spaced samples of the column over the whole run, as {@code
     * t=<s>s:<value>}: the curve's figures for a failure message.
     */
    public String excerpt(String column, int points) {
        List<String> parts = new ArrayList<>();
        int step = Math.max(1, rows.size() / points);
        for (int r = 0; r < rows.size(); r += step) {
            parts.add(point(r, column));
        }
        if ((rows.size() - 1) % step != 0) {
            parts.add(point(rows.size() - 1, column));
        }
        return column + ": " + String.join(", ", parts);
    }

    private String point(int row, String column) {
        return String.format(
                Locale.ROOT,
                "t=%.0fs%s:%s",
                value(row, TIME),
                value(row, RUNNING) == 1 ? "" : "(ended)",
                format(value(row, column)));
    }

    static String format(double value) {
        if (Double.isNaN(value)) {
            return "";
        }
        if (value == Math.rint(value) && Math.abs(value) < 1e15) {
            return Long.toString((long) value);
        }
        return String.format(Locale.ROOT, "%.1f", value);
    }
}
