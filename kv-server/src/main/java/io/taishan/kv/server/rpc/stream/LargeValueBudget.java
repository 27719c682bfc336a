package io.taishan.kv.server.rpc.stream;

import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;

/**
 * What bounds the heap of values that move in chunks (ReadValue, UploadValue): a byte budget that
 * every such value holds while it is on the heap, the staged uploads waiting for their Write, and
 * the threads that wait for room and stream (see the package doc).
 *
 * <p>A transfer waits until its bytes fit in the budget; one larger than the whole budget runs
 * alone (when nothing else holds any), so the heap they take is at most max(budget, one value).
 * Waiting happens on this class's own threads, never on the network threads or the call pool, so
 * big transfers queueing up hold up no small call.
 */
public final class LargeValueBudget implements AutoCloseable {
    /** A staged value no Write took within this goes, and its bytes with it. */
    static final long STAGED_LIFETIME_NANOS = TimeUnit.MINUTES.toNanos(2);

    /** Transfers that may run (stream, or wait for room) at once; more queue. */
    static final int THREADS = 8;

    /** A value staged for a Write. */
    public record Staged(String table, int shard, byte[] value, long expiresAtNanos) {}

    private final long budgetBytes;

    @GuardedBy("this")
    private long heldBytes;

    @GuardedBy("this")
    private long peakHeldBytes;

    private final Map<Long, Staged> staged = new ConcurrentHashMap<>();
    private final ThreadPoolExecutor executor;

    public LargeValueBudget(long budgetBytes) {
        this.budgetBytes = budgetBytes;
        this.executor =
                new ThreadPoolExecutor(
                        THREADS,
                        THREADS,
                        60,
                        TimeUnit.SECONDS,
                        new LinkedBlockingQueue<>(),
                        new ThreadFactory() {
                            private final AtomicInteger count = new AtomicInteger();

                            @Override
                            public Thread newThread(Runnable runnable) {
                                Thread thread =
                                        new Thread(runnable, "kv-large-" + count.incrementAndGet());
                                thread.setDaemon(true);
                                return thread;
                            }
                        });
        executor.allowCoreThreadTimeOut(true);
    }

    public ExecutorService executor() {
        return executor;
    }

    long budgetBytes() {
        return budgetBytes;
    }

    public synchronized long heldBytes() {
        return heldBytes;
    }

    /** The most {@link #heldBytes} has been since the start. */
    public synchronized long peakHeldBytes() {
        return peakHeldBytes;
    }

    @GuardedBy("this")
    private void take(long bytes) {
        heldBytes += bytes;
        peakHeldBytes = Math.max(peakHeldBytes, heldBytes);
    }

    /** Takes the bytes if they fit now; never waits. */
    public synchronized boolean tryReserve(long bytes) {
        if (heldBytes == 0 || heldBytes + bytes <= budgetBytes) {
            take(bytes);
            return true;
        }
        return false;
    }

    /**
     * Waits until the bytes fit, or {@code gone} says the call ended (false then, nothing held).
     * Expired staged values are dropped while it waits.
     */
    public boolean reserve(long bytes, BooleanSupplier gone) throws InterruptedException {
        while (true) {
            synchronized (this) {
                if (heldBytes == 0 || heldBytes + bytes <= budgetBytes) {
                    take(bytes);
                    return true;
                }
                if (gone.getAsBoolean()) {
                    return false;
                }
                // Woken by a release; the timeout is for the caller's end and expiring uploads.
                wait(100);
            }
            dropExpired();
        }
    }

    public synchronized void release(long bytes) {
        heldBytes -= bytes;
        notifyAll();
    }

    /** Keeps an uploaded value, whose bytes are reserved, for a Write; returns its id. */
    public long stage(String table, int shard, byte[] value) {
        dropExpired();
        long expires = System.nanoTime() + STAGED_LIFETIME_NANOS;
        while (true) {
            long id = ThreadLocalRandom.current().nextLong();
            if (id != 0
                    && staged.putIfAbsent(id, new Staged(table, shard, value, expires)) == null) {
                return id;
            }
        }
    }

    /**
     * Takes a staged value out for a Write to that table and shard; its bytes stay reserved until
     * the caller releases them. Null if there is none such (never staged, taken, or expired).
     */
    @Nullable
    public Staged take(long id, String table, int shard) {
        Staged s = staged.get(id);
        if (s == null || !s.table().equals(table) || s.shard() != shard) {
            return null;
        }
        return staged.remove(id, s) ? s : null;
    }

    int stagedCount() {
        return staged.size();
    }

    private void dropExpired() {
        long now = System.nanoTime();
        for (Iterator<Map.Entry<Long, Staged>> it = staged.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Long, Staged> e = it.next();
            if (now - e.getValue().expiresAtNanos() > 0
                    && staged.remove(e.getKey(), e.getValue())) {
                release(e.getValue().value().length);
            }
        }
    }

    @Override
    public void close() {
        executor.shutdownNow();
        staged.clear();
    }
}
