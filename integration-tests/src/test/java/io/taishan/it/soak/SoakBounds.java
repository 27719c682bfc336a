package io.taishan.it.soak;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The bounds a soak run must stay within, stated before it runs and judged only from its curves.
 *
 * <ul>
 *   <li><b>Snapshots released</b>: the release lag (checkpoints completed after the oldest one
 *       whose snapshots the server still holds, beyond the retained ones) at most {@value
 *       #MAX_RELEASE_LAG} at every sample and at most {@value #TYPICAL_RELEASE_LAG} in the median;
 *       shard snapshots held per shard, in the median, at most retained + 1 in flight + {@value
 *       #TYPICAL_RELEASE_LAG}. A snapshot never released makes the lag grow with the run.
 *   <li><b>No growth</b> of the shard snapshots held, of the kv-server's open files, threads,
 *       resident memory and live heap, and of its data directory: the median of the last quarter of
 *       the run at most {@code factor ×} the median of the second quarter {@code + slack} (for the
 *       data directory, which holds a state that itself grows a little, {@code + perHour ×} the
 *       hours between the quarters). The first quarter is warm-up (heap and RocksDB's block cache
 *       grow into their sizes, idle shards close after 5 minutes). A leak grows with time, so it
 *       shows from the second quarter to the last; the slack keeps a short run's noise (one
 *       compaction more or less, a GC that shrank the heap) from failing it.
 *   <li><b>Checkpoints</b>: none failed once the first one completed (until then the tasks are
 *       still deploying and opening their shards, and decline); at least one completed in every 30
 *       s once the first one has; and, over the run, at least one per 3 s on average (the interval
 *       is 1 s).
 * </ul>
 *
 * The final state (exact against the model) is the test's own check.
 */
final class SoakBounds {
    /**
     * Checkpoints that may complete before the snapshots of a subsumed one are gone from the
     * server: its release waits for the notification in the task's mailbox, then runs off the task
     * thread, behind the checkpoints; on this 2-core machine at a load average of 21 it was seen 5
     * behind for a moment.
     */
    static final int MAX_RELEASE_LAG = 10;

    /** The usual pipeline: one subsumed checkpoint whose drop is on its way, sometimes two. */
    static final int TYPICAL_RELEASE_LAG = 2;

    /** How long the job may go without a completed checkpoint. */
    static final double MAX_CHECKPOINT_AGE_S = 30;

    /** Completed checkpoints over the run at least its length in seconds divided by this. */
    static final double MAX_SECONDS_PER_CHECKPOINT = 3;

    /**
     * One growth bound: last-quarter median ≤ factor × second-quarter median + slack + perHour ×
     * the hours between the two quarters' middles (half the run).
     */
    record Growth(
            String column, String what, double factor, double slack, double perHour, String unit) {
        Growth(String column, String what, double factor, double slack, String unit) {
            this(column, what, factor, slack, 0, unit);
        }
    }

    static final List<Growth> GROWTH =
            List.of(
                    new Growth(
                            "kv_shard_snapshots", "kv-server shard snapshots held", 1.15, 64, ""),
                    new Growth("server_fds", "kv-server open file descriptors", 1.15, 32, ""),
                    new Growth("server_threads", "kv-server threads", 1.15, 8, ""),
                    new Growth("server_rss_mib", "kv-server resident memory", 1.15, 32, " MiB"),
                    new Growth(
                            "server_heap_live_mib",
                            "kv-server heap after full GC",
                            1.15,
                            16,
                            " MiB"),
                    // The state itself grows (each key's closed windows), by about 1 MiB an hour.
                    new Growth("disk_mib", "kv-server data dir on disk", 1.0, 8, 32, " MiB"));

    /** One line of the verdict: what was measured against what bound. */
    record Check(String what, String measured, String bound, boolean holds, String curve) {
        String line() {
            return (holds ? "holds   " : "VIOLATED")
                    + "  "
                    + what
                    + ": "
                    + measured
                    + " (bound: "
                    + bound
                    + ")";
        }
    }

    private SoakBounds() {}

    static List<Check> check(SoakCurve curve, int retainedCheckpoints) {
        List<Check> checks = new ArrayList<>();
        double end = curve.runSeconds();
        List<Integer> running = curve.runningBetween(0, Double.POSITIVE_INFINITY);
        List<Integer> second = curve.runningBetween(end / 4, end / 2);
        List<Integer> last = curve.runningBetween(end * 3 / 4, Double.POSITIVE_INFINITY);

        // Checkpoints completed after the oldest one still held on the server, beyond the retained.
        List<Double> lags = new ArrayList<>();
        for (int r : running) {
            double latest = curve.value(r, "last_checkpoint_id");
            double oldest = curve.value(r, "kv_oldest_snapshot_id");
            if (!Double.isNaN(latest) && !Double.isNaN(oldest)) {
                lags.add(Math.max(0, latest - oldest - (retainedCheckpoints - 1)));
            }
        }
        double[] lag = lags.stream().mapToDouble(Double::doubleValue).toArray();
        double worstLag = SoakCurve.max(lag);
        double typicalLag = SoakCurve.median(lag);
        String lagCurve =
                curve.excerpt("kv_oldest_snapshot_id", 24)
                        + "\n    "
                        + curve.excerpt("last_checkpoint_id", 24);
        checks.add(
                new Check(
                        "release lag: subsumed checkpoints still held, max over the run",
                        lag.length == 0 ? "not measured" : fmt(worstLag),
                        "≤ " + MAX_RELEASE_LAG,
                        lag.length == 0 || worstLag <= MAX_RELEASE_LAG,
                        lagCurve));
        checks.add(
                new Check(
                        "release lag, median over the run",
                        lag.length == 0 ? "not measured" : fmt(typicalLag),
                        "≤ " + TYPICAL_RELEASE_LAG,
                        lag.length == 0 || typicalLag <= TYPICAL_RELEASE_LAG,
                        lagCurve));
        double[] perShard =
                running.stream()
                        .filter(r -> curve.value(r, "kv_shards") > 0)
                        .mapToDouble(
                                r ->
                                        curve.value(r, "kv_shard_snapshots")
                                                / curve.value(r, "kv_shards"))
                        .toArray();
        double typicalPerShard = SoakCurve.median(perShard);
        int perShardBound = retainedCheckpoints + 1 + TYPICAL_RELEASE_LAG;
        checks.add(
                new Check(
                        "shard snapshots held per shard, median over the run",
                        String.format(
                                Locale.ROOT,
                                "%.2f (max %.2f)",
                                typicalPerShard,
                                SoakCurve.max(perShard)),
                        "≤ " + perShardBound + " (retained + in flight + median lag)",
                        typicalPerShard <= perShardBound,
                        curve.excerpt("kv_shard_snapshots", 24)));

        for (Growth g : GROWTH) {
            double q2 = SoakCurve.median(curve.values(g.column(), second));
            double q4 = SoakCurve.median(curve.values(g.column(), last));
            if (Double.isNaN(q2) || Double.isNaN(q4)) {
                checks.add(
                        new Check(
                                g.what(),
                                "not measured",
                                "median, last quarter ≤ "
                                        + g.factor()
                                        + " × second quarter + "
                                        + fmt(g.slack()),
                                true,
                                curve.excerpt(g.column(), 24)));
                continue;
            }
            double hours = end / 2 / 3600;
            double bound = g.factor() * q2 + g.slack() + g.perHour() * hours;
            checks.add(
                    new Check(
                            g.what(),
                            String.format(
                                    Locale.ROOT,
                                    "median %s%s in the second quarter (t=%.0f–%.0f s), %s%s in"
                                            + " the last (t=%.0f–%.0f s), %+.1f%%",
                                    fmt(q2),
                                    g.unit(),
                                    end / 4,
                                    end / 2,
                                    fmt(q4),
                                    g.unit(),
                                    end * 3 / 4,
                                    end,
                                    100 * (q4 - q2) / q2),
                            String.format(
                                    Locale.ROOT,
                                    "≤ %s × %s + %s%s = %s%s",
                                    fmt(g.factor()),
                                    fmt(q2),
                                    fmt(g.slack()),
                                    g.perHour() == 0
                                            ? ""
                                            : String.format(
                                                    Locale.ROOT,
                                                    " + %s/h × %.2f h",
                                                    fmt(g.perHour()),
                                                    hours),
                                    fmt(bound),
                                    g.unit()),
                            q4 <= bound,
                            curve.excerpt(g.column(), 24)));
        }

        // Checkpoints triggered while the tasks still deploy and open their shards are declined;
        // counted from the first completed one to the end of the input.
        double failedBefore = Double.NaN;
        double failedAtEnd = Double.NaN;
        for (int r : running) {
            if (Double.isNaN(failedBefore) && curve.value(r, "checkpoints_completed") >= 1) {
                failedBefore = curve.value(r, "checkpoints_failed");
            }
            failedAtEnd = curve.value(r, "checkpoints_failed");
        }
        double failed = failedAtEnd - failedBefore;
        checks.add(
                new Check(
                        "failed checkpoints after the first completed one",
                        Double.isNaN(failed)
                                ? "no checkpoint completed"
                                : fmt(failed)
                                        + " ("
                                        + fmt(failedBefore)
                                        + " declined while the job started)",
                        "0",
                        failed == 0,
                        curve.excerpt("checkpoints_failed", 24)));
        double worstAge = SoakCurve.max(curve.values("last_checkpoint_age_s", running));
        checks.add(
                new Check(
                        "longest time without a completed checkpoint (at a sample)",
                        fmt(worstAge) + " s",
                        "≤ " + fmt(MAX_CHECKPOINT_AGE_S) + " s",
                        worstAge <= MAX_CHECKPOINT_AGE_S,
                        curve.excerpt("last_checkpoint_age_s", 24)));
        double completed = SoakCurve.max(curve.values("checkpoints_completed", running));
        double wanted = Math.floor(end / MAX_SECONDS_PER_CHECKPOINT);
        checks.add(
                new Check(
                        "completed checkpoints",
                        String.format(
                                Locale.ROOT,
                                "%s in %.0f s (one per %.2f s)",
                                fmt(completed),
                                end,
                                end / completed),
                        "≥ " + fmt(wanted) + " (one per " + fmt(MAX_SECONDS_PER_CHECKPOINT) + " s)",
                        completed >= wanted,
                        curve.excerpt("checkpoints_completed", 24)));
        return checks;
    }

    static String fmt(double value) {
        if (Double.isNaN(value)) {
            return "n/a";
        }
        return value == Math.rint(value)
                ? String.format(Locale.ROOT, "%,d", (long) value)
                : String.format(Locale.ROOT, "%,.2f", value);
    }
}
