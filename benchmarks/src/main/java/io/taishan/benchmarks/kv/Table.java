package io.taishan.benchmarks.kv;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** A Markdown table, so that the printed report can go into the docs as it is. */
final class Table {
    private final List<String[]> rows = new ArrayList<>();

    Table(String... header) {
        rows.add(header);
    }

    Table row(String... cells) {
        rows.add(cells);
        return this;
    }

    /** A figure measured over several runs: median, min and max in {@code decimals} digits. */
    Table row(String label, String unit, Spread spread, int decimals) {
        return row(
                label,
                unit,
                number(spread.median(), decimals),
                number(spread.min(), decimals),
                number(spread.max(), decimals),
                String.valueOf(spread.runs()));
    }

    static Table forSpreads(String figure) {
        return new Table(figure, "unit", "median", "min", "max", "runs");
    }

    static String number(double value, int decimals) {
        return String.format(Locale.ROOT, "%,." + decimals + "f", value);
    }

    void print(PrintStream out) {
        int columns = rows.get(0).length;
        int[] widths = new int[columns];
        for (String[] row : rows) {
            for (int c = 0; c < columns; c++) {
                widths[c] = Math.max(widths[c], Math.max(3, row[c].length()));
            }
        }
        for (int r = 0; r < rows.size(); r++) {
            out.println(line(rows.get(r), widths, r > 0));
            if (r == 0) {
                String[] rule = new String[columns];
                for (int c = 0; c < columns; c++) {
                    // Right-aligned figures; the label column stays left-aligned.
                    rule[c] = c == 0 ? "-".repeat(widths[c]) : "-".repeat(widths[c] - 1) + ":";
                }
                out.println(line(rule, widths, false));
            }
        }
        out.println();
    }

    private static String line(String[] cells, int[] widths, boolean alignNumbersRight) {
        StringBuilder sb = new StringBuilder("|");
        for (int c = 0; c < cells.length; c++) {
            String cell = cells[c];
            String pad = " ".repeat(widths[c] - cell.length());
            sb.append(' ');
            if (alignNumbersRight && c > 0) {
                sb.append(pad).append(cell);
            } else {
                sb.append(cell).append(pad);
            }
            sb.append(" |");
        }
        return sb.toString();
    }
}
