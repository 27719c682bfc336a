package io.taishan.kv.server.storage;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes expired entries of TTL'd states from the live shards in the background, without any
 * client reading them: Flink's TTL wrapper only hides expired values, and on RocksDB it is the
 * compaction filter that deletes them; rocksdbjni has no Java compaction filter, so this is ours.
 *
 * <p>Every {@code interval}, each leased shard whose owner has reported its TTL clock under its
 * current lease ({@link Shard#reportTtlTime}) is scanned state by state ({@code [state id]}
 * prefixes of the table's {@link StateTtl}s), a page at a time; the entries a page shows as expired
 * on the owner's clock are then re-read and deleted under its store's writer lock ({@link
 * Shard#deleteStillExpired}), so a value written after the page was read survives. The client's
 * clock, never the server's, decides: a fake clock in a test works, and no skew between a
 * TaskManager and the server can expire a value early. Snapshots are separate files and are never
 * touched; a restored shard is swept again once its new owner reports.
 *
 * <p>Cost: one sequential read of each swept state's entries per interval (keys and values, not
 * filling the block cache's hot set more than a scan does), plus a point read and a delete per
 * expired entry, under a node-wide byte budget per second (the limiter of filter rebuilds); memory
 * is one page. It scales to shards larger than memory, as a scan does.
 */
public final class ExpirySweeper implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ExpirySweeper.class);

    static final int PAGE_ENTRIES = 1024;
    static final long PAGE_BYTES = 1 << 20;

    private final StorageEngine engine;
    private final Duration interval;
    private final RebuildRateLimiter limiter;
    private final ScheduledExecutorService thread;
    private final AtomicLong sweeps = new AtomicLong();
    private final AtomicLong expiredEntries = new AtomicLong();
    private final AtomicLong sweptEntries = new AtomicLong();
    private volatile long lastSweepEndMillis;
    private volatile long lastSweepNanos;

    /**
     * @param bytesPerSecond what all sweeps may read per second together; 0 for no limit
     */
    public ExpirySweeper(StorageEngine engine, Duration interval, long bytesPerSecond) {
        this.engine = engine;
        this.interval = interval;
        this.limiter = new RebuildRateLimiter(bytesPerSecond);
        this.thread =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "taishan-kv-expiry");
                            t.setDaemon(true);
                            return t;
                        });
    }

    public void start() {
        long millis = Math.max(1, interval.toMillis());
        thread.scheduleWithFixedDelay(this::sweepQuietly, millis, millis, TimeUnit.MILLISECONDS);
    }

    private void sweepQuietly() {
        try {
            sweepOnce();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.warn("Expiry sweep failed", e);
        }
    }

    /** One sweep of every table with TTL'd states; returns the entries deleted. */
    public long sweepOnce() throws InterruptedException {
        long start = System.nanoTime();
        long deleted = 0;
        for (TableStore table : engine.tableStores()) {
            List<StateTtl> states = table.ttl().states();
            if (states.isEmpty()) {
                continue;
            }
            for (Shard shard : table.leasedShards()) {
                deleted += sweep(table, shard, states);
            }
            table.ttl().sweepFinished(System.currentTimeMillis());
        }
        lastSweepNanos = System.nanoTime() - start;
        lastSweepEndMillis = System.currentTimeMillis();
        sweeps.incrementAndGet();
        return deleted;
    }

    /** Sweeps of the whole node completed since start. */
    public long sweeps() {
        return sweeps.get();
    }

    /** Entries the sweeps deleted since start, over every table (dropped ones too). */
    public long expiredEntries() {
        return expiredEntries.get();
    }

    /** Entries the sweeps read since start. */
    public long sweptEntries() {
        return sweptEntries.get();
    }

    /** When the last complete sweep ended (epoch millis), 0 before the first. */
    public long lastSweepEndMillis() {
        return lastSweepEndMillis;
    }

    /** How long the last complete sweep took. */
    public long lastSweepNanos() {
        return lastSweepNanos;
    }

    private long sweep(TableStore table, Shard shard, List<StateTtl> states)
            throws InterruptedException {
        long ttlNow = shard.ttlClockForSweep();
        if (ttlNow < 0) {
            return 0;
        }
        long epoch = shard.epoch();
        long deleted = 0;
        for (StateTtl ttl : states) {
            byte[] prefix = stateIdBytes(ttl.stateId());
            byte[] start = prefix;
            while (start != null && !Thread.currentThread().isInterrupted()) {
                // Value-like entries are decided by their timestamp alone, so only that is read
                // onto the heap (a 512 MiB value costs 9 bytes here); lists whole, up to a bound.
                ScanPage page =
                        ttl.layout() == StateTtl.Layout.LIST
                                ? shard.sweepPage(
                                        start,
                                        prefix,
                                        PAGE_ENTRIES,
                                        PAGE_BYTES,
                                        epoch,
                                        Shard.SWEEP_MAX_INLINE,
                                        0)
                                : shard.sweepPage(
                                        start,
                                        prefix,
                                        PAGE_ENTRIES,
                                        PAGE_BYTES,
                                        epoch,
                                        Integer.MAX_VALUE,
                                        StateTtl.TIMESTAMP_PREFIX_BYTES);
                if (page == null) {
                    return deleted;
                }
                List<byte[]> expired = new ArrayList<>();
                long bytes = 0;
                for (ScanPage.Entry entry : page.entries()) {
                    bytes += entry.key().length + entry.value().length;
                    if (entry.value() != Shard.CHUNKED && ttl.expired(entry.value(), ttlNow)) {
                        expired.add(entry.key());
                    }
                }
                int removed = shard.deleteStillExpired(expired, ttl, ttlNow, epoch);
                deleted += removed;
                table.ttl().swept(page.entries().size(), removed);
                sweptEntries.addAndGet(page.entries().size());
                expiredEntries.addAndGet(removed);
                limiter.charge(bytes);
                start = page.hasMore() ? page.nextStartKey() : null;
            }
        }
        return deleted;
    }

    private static byte[] stateIdBytes(int stateId) {
        return new byte[] {
            (byte) (stateId >>> 24), (byte) (stateId >>> 16), (byte) (stateId >>> 8), (byte) stateId
        };
    }

    @Override
    public void close() {
        thread.shutdownNow();
        try {
            thread.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
