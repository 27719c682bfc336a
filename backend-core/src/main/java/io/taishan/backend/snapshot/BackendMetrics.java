package io.taishan.backend.snapshot;

import javax.annotation.Nullable;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;

/**
 * Snapshot and restore durations, and what the restore took from snapshots, under the operator's
 * {@code taishan} metric group.
 */
public final class BackendMetrics {
    private static final int HISTOGRAM_WINDOW = 128;

    private final Histogram snapshotAckMillis =
            new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW);
    private final Histogram snapshotMillis = new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW);
    private volatile long restoreMillis;
    private volatile long restoredShards;
    private volatile long openedShards;

    public static BackendMetrics register(@Nullable MetricGroup group) {
        BackendMetrics metrics = new BackendMetrics();
        if (group != null) {
            group.histogram("snapshotAckMillis", metrics.snapshotAckMillis);
            group.histogram("snapshotMillis", metrics.snapshotMillis);
            group.gauge("restoreMillis", () -> metrics.restoreMillis);
            group.gauge("restoredShards", () -> metrics.restoredShards);
            group.gauge("openedShards", () -> metrics.openedShards);
        }
        return metrics;
    }

    /** From the marker to the acknowledgement of every shard. */
    public void snapshotAcknowledged(long millis) {
        snapshotAckMillis.update(millis);
    }

    /** From the marker to the written manifest. */
    public void snapshotCompleted(long millis) {
        snapshotMillis.update(millis);
    }

    /**
     * The backend was built in {@code millis}: {@code fromSnapshots} shards were rolled back or
     * cloned from snapshots, {@code opened} leased without one (new, or started empty).
     */
    public void restored(long millis, long fromSnapshots, long opened) {
        restoreMillis = millis;
        restoredShards = fromSnapshots;
        openedShards = opened;
    }
}
