package io.taishan.backend.snapshot;

import javax.annotation.Nullable;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;

/**
 * Snapshot and restore durations, what the restore took from snapshots, and what durable
 * checkpoints copied into and fetched from checkpoint storage, under the operator's {@code taishan}
 * metric group.
 */
public final class BackendMetrics {
    private static final int HISTOGRAM_WINDOW = 128;

    private final Histogram snapshotAckMillis =
            new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW);
    private final Histogram snapshotMillis = new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW);
    private volatile long restoreMillis;
    private volatile long restoredShards;
    private volatile long openedShards;
    private volatile long restoreDownloadedBytes;
    private final Histogram durableUploadMillis =
            new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW);
    private volatile long durableUploadedBytes;
    private volatile long durableUploadedFiles;
    private volatile long durableReusedFiles;
    private volatile long durableReusedBytes;

    public static BackendMetrics register(@Nullable MetricGroup group) {
        BackendMetrics metrics = new BackendMetrics();
        if (group != null) {
            group.histogram("snapshotAckMillis", metrics.snapshotAckMillis);
            group.histogram("snapshotMillis", metrics.snapshotMillis);
            group.gauge("restoreMillis", () -> metrics.restoreMillis);
            group.gauge("restoredShards", () -> metrics.restoredShards);
            group.gauge("openedShards", () -> metrics.openedShards);
            group.gauge("restoreDownloadedBytes", () -> metrics.restoreDownloadedBytes);
            group.histogram("durableUploadMillis", metrics.durableUploadMillis);
            group.gauge("durableUploadedBytes", () -> metrics.durableUploadedBytes);
            group.gauge("durableUploadedFiles", () -> metrics.durableUploadedFiles);
            group.gauge("durableReusedFiles", () -> metrics.durableReusedFiles);
            group.gauge("durableReusedBytes", () -> metrics.durableReusedBytes);
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
     * cloned from snapshots, {@code opened} leased without one (new, or started empty); the nodes
     * downloaded {@code downloadedBytes} of durable checkpoints' copies for it (0 when each held
     * its snapshots).
     */
    public void restored(long millis, long fromSnapshots, long opened, long downloadedBytes) {
        restoreMillis = millis;
        restoredShards = fromSnapshots;
        openedShards = opened;
        restoreDownloadedBytes = downloadedBytes;
    }

    /**
     * The last durable checkpoint's copy into checkpoint storage took {@code millis}, wrote {@code
     * uploadedBytes} (data files and metadata packs) in {@code uploadedFiles} new data files, and
     * referenced {@code reusedFiles} copies ({@code reusedBytes}) of the last confirmed checkpoint
     * instead.
     */
    public void durableUploaded(
            long millis,
            long uploadedBytes,
            long uploadedFiles,
            long reusedFiles,
            long reusedBytes) {
        durableUploadMillis.update(millis);
        durableUploadedBytes = uploadedBytes;
        durableUploadedFiles = uploadedFiles;
        durableReusedFiles = reusedFiles;
        durableReusedBytes = reusedBytes;
    }

    /** Bytes downloaded from checkpoint storage by the restore, for tests. */
    public long restoreDownloadedBytes() {
        return restoreDownloadedBytes;
    }
}
