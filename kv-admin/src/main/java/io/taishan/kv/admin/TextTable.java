package io.taishan.kv.admin;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Rows printed in columns padded to their widest cell, numbers right-aligned so that digits line
 * up, everything else left-aligned.
 */
final class TextTable {
    private static final String GAP = "  ";

    private final List<String> headers;
    private final boolean[] rightAligned;
    private final List<List<String>> rows = new ArrayList<>();

    /** A header starting with {@code >} marks a right-aligned column; the mark is not printed. */
    TextTable(String... headers) {
        this.headers = new ArrayList<>(headers.length);
        this.rightAligned = new boolean[headers.length];
        for (int i = 0; i < headers.length; i++) {
            rightAligned[i] = headers[i].startsWith(">");
            this.headers.add(rightAligned[i] ? headers[i].substring(1) : headers[i]);
        }
    }

    TextTable row(Object... cells) {
        if (cells.length != headers.size()) {
            throw new IllegalArgumentException(
                    "row has " + cells.length + " cells, table has " + headers.size() + " columns");
        }
        List<String> row = new ArrayList<>(cells.length);
        for (Object cell : cells) {
            row.add(String.valueOf(cell));
        }
        rows.add(row);
        return this;
    }

    boolean isEmpty() {
        return rows.isEmpty();
    }

    void print(PrintStream out) {
        int[] widths = new int[headers.size()];
        for (int c = 0; c < widths.length; c++) {
            widths[c] = headers.get(c).length();
            for (List<String> row : rows) {
                widths[c] = Math.max(widths[c], row.get(c).length());
            }
        }
        printLine(out, headers, widths);
        for (List<String> row : rows) {
            printLine(out, row, widths);
        }
    }

    private void printLine(PrintStream out, List<String> cells, int[] widths) {
        StringBuilder line = new StringBuilder();
        for (int c = 0; c < cells.size(); c++) {
            if (c > 0) {
                line.append(GAP);
            }
            String cell = cells.get(c);
            String padding = " ".repeat(widths[c] - cell.length());
            line.append(rightAligned[c] ? padding + cell : cell + padding);
        }
        out.println(line.toString().stripTrailing());
    }
}
