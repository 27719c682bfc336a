package io.taishan.kv.admin;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;

/** How sizes, instants and durations read in the admin tables. */
final class Formats {
    private static final DateTimeFormatter UTC =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'", Locale.ROOT)
                    .withZone(ZoneOffset.UTC);
    private static final String[] UNITS = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};

    private Formats() {}

    /** Binary units with one decimal, e.g. {@code 12.3 MiB}; plain bytes below 1 KiB. */
    static String size(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        double value = bytes;
        int unit = 0;
        while (value >= 1024 && unit < UNITS.length - 1) {
            value /= 1024;
            unit++;
        }
        return String.format(Locale.ROOT, "%.1f %s", value, UNITS[unit]);
    }

    static String instant(long epochMillis) {
        return UTC.format(Instant.ofEpochMilli(epochMillis));
    }

    /** {@code 3d 4h 5m 6s}, leading zero units left out. */
    static String duration(long millis) {
        Duration d = Duration.ofMillis(Math.max(0, millis));
        StringBuilder text = new StringBuilder();
        appendUnit(text, d.toDaysPart(), "d");
        appendUnit(text, d.toHoursPart(), "h");
        appendUnit(text, d.toMinutesPart(), "m");
        text.append(d.toSecondsPart()).append('s');
        return text.toString();
    }

    /** Ascending shards as compact ranges, e.g. {@code 0-2,7,9-11}; {@code -} for none. */
    static String ranges(List<Integer> ascending) {
        if (ascending.isEmpty()) {
            return "-";
        }
        StringBuilder text = new StringBuilder();
        int start = ascending.get(0);
        int previous = start;
        for (int i = 1; i <= ascending.size(); i++) {
            int next = i < ascending.size() ? ascending.get(i) : Integer.MIN_VALUE;
            if (i < ascending.size() && next == previous + 1) {
                previous = next;
                continue;
            }
            text.append(text.length() == 0 ? "" : ",").append(start);
            if (previous > start) {
                text.append('-').append(previous);
            }
            start = next;
            previous = next;
        }
        return text.toString();
    }

    private static void appendUnit(StringBuilder text, long amount, String unit) {
        if (amount > 0 || text.length() > 0) {
            text.append(amount).append(unit).append(' ');
        }
    }
}
