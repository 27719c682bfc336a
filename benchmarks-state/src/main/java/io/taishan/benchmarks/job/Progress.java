package io.taishan.benchmarks.job;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Where the job's one consuming subtask is: records processed, and the moment (with the backend's
 * metrics) at which it reached each phase boundary. Static because the MiniCluster runs in this
 * JVM; the boundaries are taken on the task thread at the exact record, so no poller's latency
 * counts.
 */
public final class Progress {
    private static final AtomicLong PROCESSED = new AtomicLong();
    private static long[] boundaries = new long[0];
    private static volatile Mark[] marks = new Mark[0];
    private static int next;
    private static long count;

    /** The moment a boundary was reached. */
    public record Mark(long records, long nanos, long epochMillis, Map<String, Double> metrics) {}

    private Progress() {}

    /** Before a job: the cumulative record counts at which to take a mark. */
    public static synchronized void expect(long... cumulativeRecords) {
        boundaries = cumulativeRecords.clone();
        marks = new Mark[boundaries.length];
        next = 0;
        count = 0;
        PROCESSED.set(0);
    }

    /** On the task thread, once per processed record. */
    static void recordProcessed() {
        long n = ++count;
        PROCESSED.lazySet(n);
        if (next < boundaries.length && n == boundaries[next]) {
            Mark[] m = marks;
            m[next++] =
                    new Mark(
                            n,
                            System.nanoTime(),
                            System.currentTimeMillis(),
                            MetricsCapture.snapshot());
            marks = m;
        }
    }

    public static long processed() {
        return PROCESSED.get();
    }

    /** The mark of boundary {@code i}, or null while it is not reached. */
    public static Mark mark(int i) {
        return marks[i];
    }
}
