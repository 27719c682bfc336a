package io.taishan.kv.server;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/** Parses the values of a config file: sizes like {@code 256m}, durations like {@code 5m}. */
final class ConfigValues {
    private ConfigValues() {}

    static long bytes(String key, String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        long unit = 1;
        String digits = v;
        if (v.endsWith("kb") || v.endsWith("mb") || v.endsWith("gb")) {
            digits = v.substring(0, v.length() - 2);
            unit = unitOf(v.charAt(v.length() - 2));
        } else if (v.endsWith("k") || v.endsWith("m") || v.endsWith("g")) {
            digits = v.substring(0, v.length() - 1);
            unit = unitOf(v.charAt(v.length() - 1));
        } else if (v.endsWith("b")) {
            digits = v.substring(0, v.length() - 1);
        }
        try {
            long n = Long.parseLong(digits.trim());
            if (n < 0) {
                throw new NumberFormatException();
            }
            return Math.multiplyExact(n, unit);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException(
                    "bad size for '"
                            + key
                            + "': '"
                            + value
                            + "' (expected e.g. 65536, 64k, 256m, 1g)");
        }
    }

    static int intBytes(String key, String value) {
        long n = bytes(key, value);
        if (n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "size for '" + key + "' too large: '" + value + "' (at most 2g - 1)");
        }
        return (int) n;
    }

    private static long unitOf(char c) {
        return switch (c) {
            case 'k' -> 1L << 10;
            case 'm' -> 1L << 20;
            default -> 1L << 30;
        };
    }

    static int integer(String key, String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad integer for '" + key + "': '" + value + "'");
        }
    }

    static double decimal(String key, String value) {
        try {
            return Double.parseDouble(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "bad number for '" + key + "': '" + value + "' (expected e.g. 0.01)");
        }
    }

    /** A file's path; whether the file is there is checked when the server starts. */
    static Path path(String key, String value) {
        String v = value.trim();
        if (v.isEmpty()) {
            throw new IllegalArgumentException("empty path for '" + key + "'");
        }
        try {
            return Path.of(v);
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException(
                    "bad path for '" + key + "': '" + value + "': " + e.getReason());
        }
    }

    static boolean bool(String key, String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (v.equals("true") || v.equals("false")) {
            return Boolean.parseBoolean(v);
        }
        throw new IllegalArgumentException(
                "bad boolean for '" + key + "': '" + value + "' (expected true or false)");
    }

    /** {@code 500ms}, {@code 30s}, {@code 5m}, {@code 1h}, or plain milliseconds. */
    static Duration duration(String key, String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        try {
            if (v.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2).trim()));
            } else if (v.endsWith("s")) {
                return Duration.ofSeconds(Long.parseLong(v.substring(0, v.length() - 1).trim()));
            } else if (v.endsWith("m")) {
                return Duration.ofMinutes(Long.parseLong(v.substring(0, v.length() - 1).trim()));
            } else if (v.endsWith("h")) {
                return Duration.ofHours(Long.parseLong(v.substring(0, v.length() - 1).trim()));
            }
            return Duration.ofMillis(Long.parseLong(v));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "bad duration for '"
                            + key
                            + "': '"
                            + value
                            + "' (expected e.g. 500ms, 30s, 5m)");
        }
    }
}
