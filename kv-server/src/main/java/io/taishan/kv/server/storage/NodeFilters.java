package io.taishan.kv.server.storage;

import io.taishan.bloom.FilterGeometry;
import io.taishan.bloom.FilterSizing;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the shards' Bloom filters share on one node: their sizing, the memory limit they are
 * accounted against, the rebuild threads with their queue and read-rate limit, and the threads that
 * send filter copies to clients.
 *
 * <p><b>Memory.</b> Every live filter and every filter being rebuilt is reserved against {@link
 * #limitBytes()} before it is allocated; a reservation that does not fit leaves that shard's filter
 * unavailable (a client then reads from the server), never partial, and it is tried again later.
 * Copies that live only while they are written to a file or sent to a client are counted in {@link
 * #totalBytes()} but not refused: a snapshot must not fail for lack of filter memory. They are
 * bounded by the threads that make them: the shard pool's parallel snapshots and closes, and {@link
 * FilterOptions#maxConcurrentFetches()} fetches.
 *
 * <p><b>Rebuilds</b> run on {@link FilterOptions#rebuildThreads()} daemon threads. A shard without
 * a filter it can serve jumps the queue ahead of shards whose filter only got imprecise; a shard is
 * queued at most once.
 */
final class NodeFilters implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NodeFilters.class);

    private final FilterOptions options;
    private final FilterSizing sizing;
    private final long limitBytes;
    private final AtomicLong reservedBytes = new AtomicLong();
    private final AtomicLong transientBytes = new AtomicLong();
    private final AtomicInteger running = new AtomicInteger();
    private final LinkedBlockingDeque<ShardFilter> queue = new LinkedBlockingDeque<>();
    private final RebuildRateLimiter rateLimiter;
    private final List<Thread> rebuilders = new ArrayList<>();
    private final ExecutorService fetchPool;
    private volatile boolean closed;

    /** Called by a rebuild before each page it scans, outside every lock. */
    interface ScanHook {
        void beforePage(Shard shard, long keysScanned) throws InterruptedException;
    }

    /** Tests hold or interleave a rebuild's scan with it; a no-op otherwise. */
    volatile ScanHook scanHook = (shard, keysScanned) -> {};

    NodeFilters(FilterOptions options) {
        this.options = options;
        this.sizing = options.sizing();
        this.limitBytes = withinDirectMemory(options.maxMemoryBytes());
        this.rateLimiter = new RebuildRateLimiter(options.rebuildBytesPerSecond());
        for (int i = 0; i < options.rebuildThreads(); i++) {
            Thread t = new Thread(this::rebuildLoop, "taishan-kv-filter-rebuild-" + i);
            t.setDaemon(true);
            rebuilders.add(t);
            t.start();
        }
        AtomicInteger fetchThreads = new AtomicInteger();
        this.fetchPool =
                Executors.newFixedThreadPool(
                        options.maxConcurrentFetches(),
                        r -> {
                            Thread t =
                                    new Thread(
                                            r,
                                            "taishan-kv-filter-fetch-"
                                                    + fetchThreads.incrementAndGet());
                            t.setDaemon(true);
                            return t;
                        });
    }

    /**
     * Filters are direct ByteBuffers: past {@code -XX:MaxDirectMemorySize} (by default the heap
     * size) allocation fails with an OutOfMemoryError. Half of it leaves room for the copies being
     * saved or sent and for gRPC's own buffers.
     */
    private static long withinDirectMemory(long configured) {
        long direct = maxDirectMemory();
        long fit = Math.max(1, direct / 2);
        if (configured <= fit) {
            return configured;
        }
        LOG.warn(
                "filter.max-memory-bytes {} is more than half of the JVM's direct memory limit {}:"
                        + " using {} (raise -XX:MaxDirectMemorySize to allow more)",
                configured,
                direct,
                fit);
        return fit;
    }

    static long maxDirectMemory() {
        for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("-XX:MaxDirectMemorySize=")) {
                try {
                    return parseJvmSize(arg.substring("-XX:MaxDirectMemorySize=".length()));
                } catch (NumberFormatException e) {
                    break;
                }
            }
        }
        return Runtime.getRuntime().maxMemory();
    }

    private static long parseJvmSize(String v) {
        char unit = Character.toLowerCase(v.charAt(v.length() - 1));
        long shift =
                switch (unit) {
                    case 'k' -> 10;
                    case 'm' -> 20;
                    case 'g' -> 30;
                    case 't' -> 40;
                    default -> 0;
                };
        String digits = shift == 0 ? v : v.substring(0, v.length() - 1);
        return Long.parseLong(digits) << shift;
    }

    FilterOptions options() {
        return options;
    }

    FilterSizing sizing() {
        return sizing;
    }

    /** The limit for live and rebuilding filters, after clamping to the JVM's direct memory. */
    long limitBytes() {
        return limitBytes;
    }

    /** Off-heap bytes of every filter on the node: reserved ones and transient copies. */
    long totalBytes() {
        return reservedBytes.get() + transientBytes.get();
    }

    long reservedBytes() {
        return reservedBytes.get();
    }

    /** Rebuilds running or queued. */
    int rebuildsPending() {
        return running.get() + queue.size();
    }

    /**
     * What the new shards of one table are sized for together: 262,144 keys, so a new shard of a
     * table of 128 shards starts with room for 2,048 keys (2.5 KiB; its filter is not rebuilt on
     * the way there, which on the write path holds the shard's writes and makes every client fetch
     * the new copy) and one of 32,768 shards at the floor of 64 (192 bytes): a table's new shards
     * cost at most 6 MiB, at 128 shards 320 KiB.
     */
    static final long FRESH_KEYS_PER_TABLE = 262_144;

    /** The most keys a new shard's filter is sized for, whatever the table. */
    static final long MAX_FRESH_SHARD_KEYS = 2_048;

    private final ConcurrentHashMap<Integer, FilterGeometry> freshGeometries =
            new ConcurrentHashMap<>();

    /** The geometry of a new shard's filter in a table of {@code tableShards} shards. */
    FilterGeometry freshGeometry(int tableShards) {
        return freshGeometries.computeIfAbsent(
                tableShards,
                shards ->
                        sizing.geometryForLiveKeys(
                                Math.min(
                                        MAX_FRESH_SHARD_KEYS,
                                        FRESH_KEYS_PER_TABLE / Math.max(1, shards))));
    }

    /** Off-heap bytes of a filter built for {@code liveKeys} keys. */
    long bytesForLiveKeys(long liveKeys) {
        return bytesOf(sizing.geometryForLiveKeys(liveKeys));
    }

    static long bytesOf(FilterGeometry geometry) {
        // BloomFilter.sizeBytes(): the blocks plus one block of alignment slack.
        return geometry.bitsBytes() + FilterGeometry.BLOCK_BYTES;
    }

    /** Reserves {@code bytes} of the limit, or returns false and reserves nothing. */
    boolean tryReserve(long bytes) {
        while (true) {
            long now = reservedBytes.get();
            if (bytes > 0 && now + bytes > limitBytes) {
                return false;
            }
            if (reservedBytes.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    /** Reserves (or, negative, releases) without checking the limit: a filter already allocated. */
    void adjust(long bytes) {
        reservedBytes.addAndGet(bytes);
    }

    void release(long bytes) {
        reservedBytes.addAndGet(-bytes);
    }

    void transientAdded(long bytes) {
        transientBytes.addAndGet(bytes);
    }

    void transientReleased(long bytes) {
        transientBytes.addAndGet(-bytes);
    }

    ExecutorService fetchPool() {
        return fetchPool;
    }

    /**
     * Queues the shard's rebuild (once). {@code urgent}: the shard has no filter it can serve, so
     * it goes before the ones whose filter only got imprecise.
     */
    void requestRebuild(ShardFilter filter, boolean urgent) {
        if (closed || !filter.markRebuildQueued()) {
            return;
        }
        if (urgent) {
            queue.offerFirst(filter);
        } else {
            queue.offerLast(filter);
        }
    }

    private void rebuildLoop() {
        while (!closed) {
            ShardFilter shard;
            try {
                shard = queue.take();
            } catch (InterruptedException e) {
                return;
            }
            running.incrementAndGet();
            try {
                shard.rebuild(rateLimiter);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException | Error e) {
                LOG.error("Filter rebuild of {} failed unexpectedly", shard, e);
            } finally {
                running.decrementAndGet();
            }
        }
    }

    /** Stops taking rebuilds; the running ones stop at their next page (the stores close). */
    void stopRebuilds() {
        closed = true;
        queue.clear();
        for (Thread t : rebuilders) {
            t.interrupt();
        }
    }

    @Override
    public void close() {
        stopRebuilds();
        fetchPool.shutdownNow();
        try {
            for (Thread t : rebuilders) {
                t.join(TimeUnit.SECONDS.toMillis(30));
            }
            fetchPool.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
