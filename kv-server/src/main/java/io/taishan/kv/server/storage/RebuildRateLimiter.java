package io.taishan.kv.server.storage;

import java.util.concurrent.TimeUnit;

/**
 * The node-wide read budget of filter rebuild scans, in bytes per second: each scan page is charged
 * after it was read and the scanner sleeps until the budget has caught up, so the average rate
 * never exceeds the limit (a page may burst). Shared by every rebuild thread.
 */
final class RebuildRateLimiter {
    private final long bytesPerSecond;

    // Guarded by this: when the bytes charged so far will have been paid for.
    private long paidUntilNanos = System.nanoTime();

    /**
     * @param bytesPerSecond 0 for no limit
     */
    RebuildRateLimiter(long bytesPerSecond) {
        this.bytesPerSecond = bytesPerSecond;
    }

    /** Charges {@code bytes} and sleeps until they are paid for. */
    void charge(long bytes) throws InterruptedException {
        if (bytesPerSecond <= 0 || bytes <= 0) {
            return;
        }
        long waitNanos;
        synchronized (this) {
            long now = System.nanoTime();
            long start = Math.max(now, paidUntilNanos);
            paidUntilNanos = start + (long) (bytes * 1e9 / bytesPerSecond);
            waitNanos = paidUntilNanos - now;
        }
        TimeUnit.NANOSECONDS.sleep(waitNanos);
    }
}
