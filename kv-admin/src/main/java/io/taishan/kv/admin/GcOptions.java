package io.taishan.kv.admin;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.annotation.Nullable;

/**
 * What {@code gc} is told: the checkpoints and savepoints kept (paths to read, a list already read,
 * or none at all, each said explicitly), the tables in scope, and how long a table must have been
 * idle to be touched.
 */
record GcOptions(
        List<String> keep,
        @Nullable Path keptSnapshotsFile,
        boolean keepNone,
        List<String> tablePrefixes,
        Duration minIdle) {

    /**
     * A running job writes every checkpoint interval at least (a marker per shard), so an hour
     * spares any job with checkpointing on and a sane interval; a finished job's table can wait.
     */
    static final Duration DEFAULT_MIN_IDLE = Duration.ofHours(1);

    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h|d)");

    boolean inScope(String table) {
        return tablePrefixes.stream().anyMatch(table::startsWith);
    }

    static final class Builder {
        private final List<String> keep = new ArrayList<>();
        @Nullable private Path keptSnapshotsFile;
        private boolean keepNone;
        private final List<String> tablePrefixes = new ArrayList<>();
        @Nullable private Duration minIdle;
        private boolean given;

        void keep(String path) {
            keep.add(path);
            given = true;
        }

        void keptSnapshots(String file) {
            if (keptSnapshotsFile != null) {
                throw new AdminUsageException("--kept-snapshots may be given once");
            }
            keptSnapshotsFile = Path.of(file);
            given = true;
        }

        void keepNone() {
            keepNone = true;
            given = true;
        }

        void tablePrefix(String prefix) {
            if (prefix.isBlank()) {
                throw new AdminUsageException("--table-prefix must not be empty");
            }
            tablePrefixes.add(prefix);
            given = true;
        }

        void minIdle(String text) {
            minIdle = duration(text, "--min-idle");
            given = true;
        }

        boolean given() {
            return given;
        }

        GcOptions build() {
            if (tablePrefixes.isEmpty()) {
                throw new AdminUsageException(
                        "gc needs --table-prefix P: the tables it may drop from (a running job's"
                                + " table is live state, so name the jobs' prefix, not all)");
            }
            int sources = (keep.isEmpty() ? 0 : 1) + (keptSnapshotsFile == null ? 0 : 1);
            if (keepNone ? sources > 0 : sources != 1) {
                throw new AdminUsageException(
                        "gc needs what is kept: --keep PATH (each retained checkpoint or savepoint"
                                + " still kept), --kept-snapshots FILE, or --keep-none; one of"
                                + " them");
            }
            return new GcOptions(
                    List.copyOf(keep),
                    keptSnapshotsFile,
                    keepNone,
                    List.copyOf(tablePrefixes),
                    minIdle == null ? DEFAULT_MIN_IDLE : minIdle);
        }
    }

    /**
     * {@code 0}, or a number with a unit: {@code 500ms}, {@code 90s}, {@code 30m}, {@code 2h},
     * {@code 7d}.
     */
    static Duration duration(String text, String what) {
        if (text.equals("0")) {
            return Duration.ZERO;
        }
        Matcher m = DURATION.matcher(text);
        if (!m.matches()) {
            throw new AdminUsageException(
                    "bad "
                            + what
                            + " '"
                            + text
                            + "': expected 0 or a number with ms, s, m, h or d");
        }
        long amount = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(amount);
            case "s" -> Duration.ofSeconds(amount);
            case "m" -> Duration.ofMinutes(amount);
            case "h" -> Duration.ofHours(amount);
            default -> Duration.ofDays(amount);
        };
    }
}
