package io.taishan.kv.server.metrics;

import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.taishan.kv.server.durable.TransferStats;
import java.util.List;

/**
 * The node's transfers of cuts to and from Flink's checkpoint storage ({@code
 * io.taishan.kv.server.durable}), read from its counters when Prometheus scrapes: a few sums of
 * {@code LongAdder}s, nothing sampled. Registered only when {@code durable.enabled}.
 */
final class DurableTransferCollector implements MultiCollector {
    private static final String PREFIX = "taishan_kv_durable_";

    private final TransferStats stats;

    DurableTransferCollector(TransferStats stats) {
        this.stats = stats;
    }

    @Override
    public MetricSnapshots collect() {
        return new MetricSnapshots(
                List.of(
                        byDirection(
                                "transferred_files",
                                "Objects written to (upload) and read and verified from (download)"
                                        + " checkpoint storage: data files and metadata packs",
                                stats.uploadedFiles(),
                                stats.downloadedFiles()),
                        byDirection(
                                "transferred_bytes",
                                "Bytes of those objects",
                                stats.uploadedBytes(),
                                stats.downloadedBytes()),
                        counter(
                                "reused_files",
                                "Data files an upload referenced instead of uploading them again",
                                stats.reusedFiles()),
                        counter(
                                "reused_bytes",
                                "Bytes of the data files reused",
                                stats.reusedBytes()),
                        byDirection(
                                "failed_transfers",
                                "Upload and download calls that failed (timed out and cancelled"
                                        + " included)",
                                stats.failedUploads(),
                                stats.failedDownloads()),
                        counter(
                                "retries",
                                "Attempts at a file that failed and were made again",
                                stats.retries())));
    }

    private static CounterSnapshot byDirection(
            String name, String help, long upload, long download) {
        return CounterSnapshot.builder()
                .name(PREFIX + name)
                .help(help)
                .dataPoint(point(upload, Labels.of("direction", "upload")))
                .dataPoint(point(download, Labels.of("direction", "download")))
                .build();
    }

    private static CounterSnapshot counter(String name, String help, long value) {
        return CounterSnapshot.builder()
                .name(PREFIX + name)
                .help(help)
                .dataPoint(point(value, Labels.EMPTY))
                .build();
    }

    private static CounterDataPointSnapshot point(long value, Labels labels) {
        return CounterDataPointSnapshot.builder().value(value).labels(labels).build();
    }
}
