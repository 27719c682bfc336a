package io.taishan.kv.server.storage;

import java.util.concurrent.TimeUnit;

/**
 * The node-wide read budget of filter rebuild scans, in bytes per second, shared by every rebuild
 * thread: each scan page is charged after it was read, and the scanner sleeps until the budget has
 * paid for it. The time a page took to read counts toward its cost (up to {@link #BURST_NANOS}), so
 * a scan slower than the limit by itself is never slowed further, and the average rate never
 * exceeds the limit by more than one burst.
 */
final class RebuildRateLimiter {
    /** Unused budget that carries over: a tenth of a second. */
    static final long BURST_NANOS = 100_000_000L;

    private final long bytesPerSecond;

    // Guarded by this: until when the bytes charged so far use up the budget.
    private long paidUntilNanos = System.nanoTime();

    /**
     * @param bytesPerSecond 0 for no limit
     */
    RebuildRateLimiter(long bytesPerSecond) {
        this.bytesPerSecond = bytesPerSecond;
    }

    /** Charges {@code bytes} and sleeps until they are paid for. */
    void charge(long bytes) throws InterruptedException {
        long waitNanos = reserve(bytes);
        if (waitNanos > 0) {
            TimeUnit.NANOSECONDS.sleep(waitNanos);
        }
    }

    /** Charges {@code bytes}; how long to wait until they are paid for (none if not positive). */
    synchronized long reserve(long bytes) {
        if (bytesPerSecond <= 0 || bytes <= 0) {
            return 0;
        }
        long now = System.nanoTime();
        long cost = (long) (bytes * 1e9 / bytesPerSecond);
        paidUntilNanos = Math.max(paidUntilNanos, now - BURST_NANOS) + cost;
        return paidUntilNanos - now;
    }
}
