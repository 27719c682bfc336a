package io.taishan.backend.write;

import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.ThreadSafeSimpleCounter;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;

/** What the write queue reports under the operator's {@code taishan} metric group. */
public final class WriteQueueMetrics {
    private static final int HISTOGRAM_WINDOW = 1024;

    private final Counter batches = new ThreadSafeSimpleCounter();
    private final Counter ops = new ThreadSafeSimpleCounter();
    private final Histogram batchOps = new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW);
    private final Histogram batchBytes = new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW);
    private final Histogram flushLatencyMicros =
            new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW);
    private final Counter backPressureMicros = new ThreadSafeSimpleCounter();

    static WriteQueueMetrics unregistered() {
        return new WriteQueueMetrics();
    }

    /** Registers the queue's metrics; {@code depth} is read when a reporter asks. */
    static WriteQueueMetrics register(MetricGroup group, WriteBatchQueueDepth depth) {
        WriteQueueMetrics metrics = new WriteQueueMetrics();
        group.counter("writeBatches", metrics.batches);
        group.counter("writeOps", metrics.ops);
        group.histogram("writeBatchOps", metrics.batchOps);
        group.histogram("writeBatchBytes", metrics.batchBytes);
        group.histogram("flushLatencyMicros", metrics.flushLatencyMicros);
        group.counter("writeBackPressureMicros", metrics.backPressureMicros);
        group.gauge("writeQueueOps", depth::pendingOps);
        group.gauge("writeQueueBytes", depth::heldBytes);
        return metrics;
    }

    void batchSent(int opCount, long bytes) {
        batches.inc();
        ops.inc(opCount);
        batchOps.update(opCount);
        batchBytes.update(bytes);
    }

    void batchCompleted(long latencyNanos) {
        flushLatencyMicros.update(latencyNanos / 1_000);
    }

    void backPressured(long nanos) {
        backPressureMicros.inc(nanos / 1_000);
    }

    /** The queue's current depth, read lazily by gauges. */
    public interface WriteBatchQueueDepth {
        int pendingOps();

        long heldBytes();
    }
}
