package io.taishan.kv.server.storage;

import io.taishan.bloom.FilterGeometry;
import io.taishan.bloom.RebuildingFilter;
import io.taishan.kv.proto.ErrorCode;
import java.io.IOException;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import javax.annotation.Nullable;
import org.rocksdb.RocksDBException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Bloom filter of one shard's keys, and whether the server can vouch for it ({@code trusted}:
 * it contains every key live in the shard). Only a trusted filter is ever served or saved; an
 * untrusted one is rebuilt from a scan of the shard's key range in the background ({@link
 * #rebuild}). A shard has a filter while its store is open; where it comes from:
 *
 * <ul>
 *   <li>the store's {@link FilterBundle#LIVE_FILE_NAME}, written at a clean close (after the flush)
 *       and unlinked (durably) before the first put or merge after it was loaded, so a file that
 *       exists covers the live data, whatever kind of stop came since;
 *   <li>a cut's bundle, when the store is forked from it (restore, clone);
 *   <li>no bundle entry and no key in the shard's range: an empty filter is complete;
 *   <li>no entry but keys (an unclean stop after a write, a cut without it): none until a rebuild.
 * </ul>
 *
 * Puts and merges are inserted after RocksDB applied them and before the write returns, under the
 * store's writer lock; deletes are not (false positives until the next rebuild, never false
 * negatives), nor are scan-only puts.
 *
 * <p>Locking: the table's lock (read for every use, write for whatever closes the store or moves
 * the shard) and the store's writer lock, as {@link TableStore} describes; a rebuild holds the
 * table's read lock one page at a time.
 */
final class ShardFilter {
    private static final Logger LOG = LoggerFactory.getLogger(ShardFilter.class);

    /** Keys per scan page: the table's read lock is held for one page (a few milliseconds). */
    static final int SCAN_PAGE_KEYS = 4096;

    /** How long a shard waits before the next try after a rebuild failed or found no memory. */
    private static final long REBUILD_RETRY_NANOS = 10_000_000_000L;

    private final Shard shard;
    private final NodeFilters filters;

    /** The filter while the store is open, else null. Set and cleared as the class doc says. */
    @Nullable private volatile RebuildingFilter filter;

    private volatile boolean trusted;

    /** Why there is no filter to serve, for errors and the admin CLI. */
    private volatile String unavailableReason = "";

    /** Off-heap bytes this shard has reserved of the node's filter limit. */
    private final AtomicLong reservedBytes = new AtomicLong();

    private final AtomicBoolean rebuildQueued = new AtomicBoolean();

    /** The running rebuild scan; set and cleared under a table lock. */
    @Nullable private volatile FilterScan scan;

    /** No rebuild is started before this (after one failed or found no memory). */
    private volatile long rebuildNotBeforeNanos;

    /**
     * The last rebuild scanned more keys than its filter holds at the target rate: the key estimate
     * it was sized by was low, so the next one is asked for at once.
     */
    private volatile boolean rebuildUndersized;

    /**
     * The cut whose bundle holds a copy of the filter that is still valid (no key inserted since),
     * or -1; under the store's writer lock. A later cut references it instead of writing it again.
     */
    private long savedInCut = -1;

    ShardFilter(Shard shard, NodeFilters filters) {
        this.shard = shard;
        this.filters = filters;
    }

    // ---- where the filter comes from

    /**
     * The shard's store opened (or the shard joined an open store): takes its filter from {@code
     * bundle} if it has one, else an empty one when the range has no key, else asks for a rebuild.
     * Before any call can use the store for this shard.
     *
     * @param withKeys the store's shards known to hold keys, among those not in {@code bundle}
     *     (null: asks the store)
     */
    void opened(RangeDb db, @Nullable FilterBundle.Reader bundle, @Nullable BitSet withKeys) {
        closeFilter();
        boolean saved = bundle != null && bundle.contains(shard.id());
        if (saved && load(bundle)) {
            return;
        }
        boolean hasKeys =
                withKeys == null || saved ? db.hasKeys(shard.id()) : withKeys.get(shard.id());
        if (!hasKeys) {
            resetEmpty();
            return;
        }
        unavailable(
                "the shard has data but no saved filter (written before an unclean stop, or"
                        + " restored from a cut without one)",
                true);
    }

    /** Loads the shard's filter from a bundle; false (and a rebuild is asked for) if it fails. */
    boolean load(FilterBundle.Reader bundle) {
        if (!reserve(bundle.length(shard.id()))) {
            unavailable(
                    "the node's filter memory (filter.max-memory-bytes "
                            + filters.limitBytes()
                            + ") is used up; the saved filter is loaded once it fits",
                    false);
            return true;
        }
        try {
            RebuildingFilter loaded = bundle.read(shard.id(), filters.sizing());
            setReserved(loaded.sizeBytes());
            install(loaded, true);
            return true;
        } catch (IOException | RuntimeException e) {
            releaseReserved();
            LOG.warn(
                    "The saved filter of {} does not read, rebuilding it: {}", shard, e.toString());
            return false;
        }
    }

    /**
     * A filter loaded for a shard that does not have it yet (a restore loads the filters of the
     * shards it moves before it takes the table's lock), with its memory reserved; adopted by the
     * shard, or closed.
     */
    static final class Loaded implements AutoCloseable {
        private final NodeFilters filters;
        @Nullable private RebuildingFilter filter;
        private final long reservedBytes;

        private Loaded(NodeFilters filters, RebuildingFilter filter, long reservedBytes) {
            this.filters = filters;
            this.filter = filter;
            this.reservedBytes = reservedBytes;
        }

        @Override
        public void close() {
            if (filter != null) {
                filter.close();
                filter = null;
                filters.release(reservedBytes);
            }
        }
    }

    /**
     * Loads a shard's filter from a bundle with its memory reserved; null when the node's filter
     * memory has no room (the shard then rebuilds it once it fits).
     */
    @Nullable
    static Loaded loadDetached(NodeFilters filters, FilterBundle.Reader bundle, int shard)
            throws IOException {
        long estimate = bundle.length(shard);
        if (!filters.tryReserve(estimate)) {
            return null;
        }
        try {
            RebuildingFilter f = bundle.read(shard, filters.sizing());
            filters.adjust(f.sizeBytes() - estimate);
            return new Loaded(filters, f, f.sizeBytes());
        } catch (IOException | RuntimeException e) {
            filters.release(estimate);
            throw e;
        }
    }

    /** Takes a filter loaded for this shard: trusted, as its cut vouched for it. */
    void adopt(Loaded loaded) {
        closeFilter();
        RebuildingFilter f = loaded.filter;
        loaded.filter = null;
        reservedBytes.set(loaded.reservedBytes);
        install(f, true);
    }

    /** The shard's range is empty (new, or just cleared): an empty filter is complete. */
    void resetEmpty() {
        closeFilter();
        FilterGeometry fresh = filters.freshGeometry(shard.table().shardCount());
        if (reserve(NodeFilters.bytesOf(fresh))) {
            RebuildingFilter empty = RebuildingFilter.createEmpty(filters.sizing(), fresh);
            setReserved(empty.sizeBytes());
            install(empty, true);
        } else {
            unavailable(
                    "the node's filter memory (filter.max-memory-bytes "
                            + filters.limitBytes()
                            + ") is used up",
                    false);
        }
    }

    private void install(RebuildingFilter f, boolean isTrusted) {
        filter = f;
        trusted = isTrusted;
        unavailableReason = "";
        savedInCut = -1;
    }

    private void unavailable(String reason, boolean urgent) {
        unavailableReason = reason;
        filters.requestRebuild(this, urgent);
    }

    /**
     * Frees the filter (the store closes, or the shard leaves it). Under the table's write lock, or
     * with the shard not yet visible.
     */
    void closeFilter() {
        cancelScan();
        RebuildingFilter f = filter;
        filter = null;
        trusted = false;
        unavailableReason = "";
        savedInCut = -1;
        if (f != null) {
            f.close();
        }
        releaseReserved();
    }

    // ---- writes and cuts (under the store's writer lock)

    /** Inserts the hashes of keys a write put or merged, after RocksDB applied them. */
    void inserted(long[] hashes, int from, int to) {
        if (from == to) {
            return;
        }
        savedInCut = -1;
        RebuildingFilter f = filter;
        if (f != null) {
            for (int i = from; i < to; i++) {
                f.insert(hashes[i]);
            }
        }
    }

    /** Whether the filter is one the server vouches for, and so goes into cuts and bundles. */
    boolean isTrusted() {
        return filter != null && trusted;
    }

    long savedInCut() {
        return savedInCut;
    }

    void savedInCut(long cutId) {
        savedInCut = cutId;
    }

    /** A copy of the trusted filter, counted as transient memory until closed. */
    FilterCopy copy() {
        RebuildingFilter f = filter;
        if (f == null) {
            throw new IllegalStateException(shard + " has no filter to copy");
        }
        return new FilterCopy(f.snapshot(), filters);
    }

    /**
     * After a write, under the store's writer lock: a rebuild once the filter's rule says so. A
     * small shard's is done at once, in place ({@link #INLINE_REBUILD_MAX_KEYS}); a larger one's is
     * queued for the rebuild threads.
     */
    void rebuildIfDue(RangeDb db) {
        RebuildingFilter f = filter;
        if (f == null || !trusted || !rebuildAllowedNow() || !f.needsRebuild()) {
            return;
        }
        if (scan == null
                && f.liveKeysAtBuild() + f.insertsSinceBuild() <= INLINE_REBUILD_MAX_KEYS
                && rebuildInline(db, f)) {
            return;
        }
        filters.requestRebuild(this, false);
    }

    /**
     * A shard this small has its filter rebuilt in place, under its store's writer lock, when a
     * write fills it: a scan of at most this many keys takes about a millisecond, where a queued
     * rebuild may come after the next checkpoint has cut the overfull filter (a restore would then
     * load it). Small shards are what a low filter floor and many key groups make; as a shard grows
     * its rebuilds double its filter, so they cost about 1.4 scanned keys per key written.
     */
    static final long INLINE_REBUILD_MAX_KEYS = 4096;

    /** Rebuilds from the shard's range as it is now (no write can come in: the writer lock). */
    private boolean rebuildInline(RangeDb db, RebuildingFilter f) {
        long estimate = f.liveKeysAtBuild() + f.insertsSinceBuild();
        if (!reserve(filters.bytesForLiveKeys(estimate))) {
            return false;
        }
        RebuildingFilter.Rebuild handle;
        try {
            handle = f.beginRebuild(estimate);
        } catch (IllegalStateException e) {
            // A queued rebuild began on a rebuild thread between needsRebuild() and here (it
            // takes no writer lock to begin): it covers this write, which must not fail for it.
            setReserved(f.sizeBytes());
            return f.isRebuilding();
        }
        try (RangeDb.KeyScan keys = db.openKeyScan(shard.id())) {
            long[] hashes = new long[(int) Math.min(SCAN_PAGE_KEYS, estimate + 1)];
            while (true) {
                RangeDb.KeyPage page = keys.next(hashes);
                handle.addAll(hashes, 0, page.keys());
                if (page.done()) {
                    break;
                }
            }
            handle.finish();
            setReserved(f.sizeBytes());
            return true;
        } catch (RocksDBException | RuntimeException e) {
            handle.abort();
            setReserved(f.sizeBytes());
            LOG.warn("The in-place filter rebuild of {} failed: {}", shard, e.toString());
            return false;
        }
    }

    /** The version of the filter served now, or -1 if there is none. */
    long servedVersion() {
        RebuildingFilter f = filter;
        return f != null && trusted ? f.version() : -1;
    }

    // ---- serving

    /**
     * A copy for a client; the caller holds the table's read lock with the epoch checked and the
     * store open.
     *
     * @throws KvServerException FILTER_UNAVAILABLE while there is no filter to vouch for
     */
    FilterCopy copyToServe(long callerEpoch) {
        RebuildingFilter f = filter;
        if (f == null || !trusted) {
            if (scan == null) {
                filters.requestRebuild(this, true);
            }
            throw new KvServerException(
                    ErrorCode.FILTER_UNAVAILABLE,
                    shard
                            + " (epoch "
                            + callerEpoch
                            + "): no filter to serve: "
                            + unavailableReason
                            + "; fetch it again later");
        }
        return new FilterCopy(f.snapshot(), filters);
    }

    // ---- memory

    private boolean reserve(long bytes) {
        if (!filters.tryReserve(bytes)) {
            return false;
        }
        reservedBytes.addAndGet(bytes);
        return true;
    }

    /** Sets the reservation to what the filters hold (they are allocated already). */
    private void setReserved(long bytes) {
        long before = reservedBytes.getAndSet(bytes);
        filters.adjust(bytes - before);
    }

    private void releaseReserved() {
        filters.release(reservedBytes.getAndSet(0));
    }

    // ---- rebuilds

    /** Whether a rebuild scan is running (a close would cancel and lose it). */
    boolean scanning() {
        return scan != null;
    }

    /** For {@link NodeFilters}: false if the shard is queued already. */
    boolean markRebuildQueued() {
        return rebuildQueued.compareAndSet(false, true);
    }

    private boolean rebuildAllowedNow() {
        long notBefore = rebuildNotBeforeNanos;
        return notBefore == 0 || System.nanoTime() - notBefore >= 0;
    }

    /** Under the table's write lock, before the store closes or the shard moves. */
    void cancelScan() {
        FilterScan s = scan;
        if (s != null) {
            scan = null;
            s.cancelled = true;
            s.keys.close();
        }
    }

    /** One running rebuild: the RocksDB snapshot it scans and how far it got. */
    private static final class FilterScan {
        final RebuildingFilter filter;
        final RebuildingFilter.Rebuild handle;
        final RangeDb.KeyScan keys;
        final boolean fromScratch;
        final long[] hashes = new long[SCAN_PAGE_KEYS];
        final long startedNanos = System.nanoTime();
        boolean done;
        long bytesRead;
        volatile long keysScanned;
        volatile boolean cancelled;

        FilterScan(
                RebuildingFilter filter,
                RebuildingFilter.Rebuild handle,
                RangeDb.KeyScan keys,
                boolean fromScratch) {
            this.filter = filter;
            this.handle = handle;
            this.keys = keys;
            this.fromScratch = fromScratch;
        }
    }

    /**
     * Rebuilds the filter from a scan of the shard's keys, on a rebuild thread. Follows rule 2 of
     * {@link RebuildingFilter} (begin, then open the RocksDB snapshot that is scanned), so every
     * key written before the begin is scanned and every later one inserted into the new filter too.
     * Holds the table's read lock one page at a time, so writes go on; the store's writer lock only
     * to install the empty filter a shard without one is rebuilt into. A close of the store or a
     * move of the shard cancels it between pages.
     *
     * @throws InterruptedException if the thread is interrupted (shutdown) while rate-limited
     */
    void rebuild(RebuildRateLimiter limiter) throws InterruptedException {
        try {
            FilterScan s = startScan();
            if (s == null) {
                return;
            }
            while (!s.done) {
                filters.scanHook.beforePage(shard, s.keysScanned);
                long bytes = scanPage(s);
                if (bytes < 0) {
                    return;
                }
                limiter.charge(bytes);
            }
            finishScan(s);
        } finally {
            rebuildQueued.set(false);
        }
        // A request made while this one ran found the shard queued and was dropped.
        if (rebuildUndersized) {
            filters.requestRebuild(this, false);
        } else if (!trusted
                && scan == null
                && shard.usable()
                && shard.storeIfOpen() != null
                && rebuildAllowedNow()) {
            filters.requestRebuild(this, true);
        }
    }

    @Nullable
    private FilterScan startScan() {
        TableStore table = shard.table();
        table.lock().readLock().lock();
        try {
            if (!shard.usable() || scan != null || !rebuildAllowedNow()) {
                return null;
            }
            RangeStore store = shard.storeIfOpen();
            RangeDb db = store == null ? null : store.dbIfOpen();
            if (db == null) {
                // Closed since it was queued: the next open decides again.
                return null;
            }
            RebuildingFilter current = filter;
            boolean fromScratch = !trusted;
            if (!fromScratch
                    && (current == null || !(rebuildUndersized || current.needsRebuild()))) {
                return null;
            }
            rebuildUndersized = false;
            long estimate =
                    Math.max(
                            db.estimatedKeys(shard.id()),
                            current == null ? 0 : current.liveKeysAtBuild());
            long baseBytes = current == null ? filters.bytesForLiveKeys(0) : 0;
            long nextBytes = filters.bytesForLiveKeys(estimate);
            if (!reserve(baseBytes + nextBytes)) {
                rebuildNotBeforeNanos = System.nanoTime() + REBUILD_RETRY_NANOS;
                String why =
                        "the node's filter memory (filter.max-memory-bytes "
                                + filters.limitBytes()
                                + ") has no room for a "
                                + nextBytes
                                + "-byte rebuild";
                if (fromScratch) {
                    unavailableReason = why + ", tried again every 10 s";
                } else {
                    LOG.debug("Not rebuilding the filter of {}: {}", shard, why);
                }
                return null;
            }
            RebuildingFilter f = current;
            RebuildingFilter.Rebuild handle = null;
            try {
                if (f == null) {
                    RebuildingFilter empty = RebuildingFilter.createEmpty(filters.sizing());
                    store.writerLock().lock();
                    try {
                        filter = empty;
                    } finally {
                        store.writerLock().unlock();
                    }
                    f = empty;
                }
                handle = f.beginRebuild(estimate);
                setReserved(f.sizeBytes());
                // Opened after beginRebuild: rule 2.
                FilterScan s = new FilterScan(f, handle, db.openKeyScan(shard.id()), fromScratch);
                scan = s;
                if (fromScratch) {
                    unavailableReason = "its filter is being rebuilt from a key scan";
                }
                return s;
            } catch (RuntimeException e) {
                abandonRebuild(f, handle, fromScratch, e);
                return null;
            }
        } catch (RocksDBException e) {
            LOG.warn("Cannot start the filter rebuild of {}: {}", shard, e.getMessage());
            rebuildNotBeforeNanos = System.nanoTime() + REBUILD_RETRY_NANOS;
            return null;
        } finally {
            table.lock().readLock().unlock();
        }
    }

    /** Scans one page; the bytes read, or -1 if the rebuild is over (cancelled or failed). */
    private long scanPage(FilterScan s) {
        TableStore table = shard.table();
        table.lock().readLock().lock();
        try {
            if (s.cancelled) {
                return -1;
            }
            RangeDb.KeyPage page = s.keys.next(s.hashes);
            s.handle.addAll(s.hashes, 0, page.keys());
            s.keysScanned += page.keys();
            s.bytesRead += page.bytes();
            s.done = page.done();
            return page.bytes();
        } catch (RocksDBException | RuntimeException e) {
            scan = null;
            s.cancelled = true;
            s.keys.close();
            abandonRebuild(s.filter, s.handle, s.fromScratch, e);
            return -1;
        } finally {
            table.lock().readLock().unlock();
        }
    }

    private void finishScan(FilterScan s) {
        TableStore table = shard.table();
        table.lock().readLock().lock();
        try {
            if (s.cancelled) {
                return;
            }
            scan = null;
            s.keys.close();
            long version = s.handle.finish();
            setReserved(s.filter.sizeBytes());
            FilterGeometry built = s.filter.geometry();
            rebuildUndersized =
                    s.keysScanned > filters.sizing().capacity(built)
                            && built.numBlocks() < filters.sizing().maxBlocks();
            if (s.fromScratch) {
                trusted = true;
                unavailableReason = "";
            }
            rebuildNotBeforeNanos = 0;
            LOG.debug(
                    "Rebuilt the filter of {}{}: version {}, {} keys, {} bytes read in {} ms, {}",
                    shard,
                    s.fromScratch ? " (it had none it could serve)" : "",
                    version,
                    s.keysScanned,
                    s.bytesRead,
                    (System.nanoTime() - s.startedNanos) / 1_000_000,
                    s.filter.geometry());
        } finally {
            table.lock().readLock().unlock();
        }
    }

    /**
     * A rebuild that failed: the shard keeps the filter it had (a refresh) or goes back to none
     * (from scratch), and the next try waits. Under the table's read lock.
     */
    private void abandonRebuild(
            RebuildingFilter f,
            @Nullable RebuildingFilter.Rebuild handle,
            boolean fromScratch,
            Exception e) {
        LOG.warn("The filter rebuild of {} failed: {}", shard, e.toString());
        rebuildNotBeforeNanos = System.nanoTime() + REBUILD_RETRY_NANOS;
        if (fromScratch) {
            if (f != null) {
                RangeStore store = shard.storeIfOpen();
                ReentrantLock writer = store == null ? null : store.writerLock();
                if (writer != null) {
                    writer.lock();
                }
                try {
                    if (filter == f) {
                        filter = null;
                    }
                    f.close();
                } finally {
                    if (writer != null) {
                        writer.unlock();
                    }
                }
            }
            unavailableReason = "its rebuild failed (" + e.getMessage() + "), tried again in 10 s";
            releaseReserved();
        } else {
            if (handle != null) {
                handle.abort();
            }
            if (f != null) {
                setReserved(f.sizeBytes());
            } else {
                releaseReserved();
            }
        }
    }

    /** Periodically: re-queues a rebuild that was refused (no memory, a failure) or dropped. */
    void maintain() {
        if (scan != null || !rebuildAllowedNow()) {
            return;
        }
        RebuildingFilter f = filter;
        if (f == null && !trusted && !unavailableReason.isEmpty()) {
            filters.requestRebuild(this, true);
        } else if (f != null && !trusted) {
            filters.requestRebuild(this, true);
        } else if (f != null && (rebuildUndersized || f.needsRebuild())) {
            filters.requestRebuild(this, false);
        }
    }

    /**
     * The filter's state for the admin CLI; under the table's read lock. While the store is closed,
     * {@code closedState} says what its opening will find.
     */
    FilterStatus status(boolean storeOpen, FilterStatus.State closedState, long savedBytes) {
        boolean queued = rebuildQueued.get();
        if (!storeOpen) {
            return new FilterStatus(closedState, 0, 0, savedBytes, 0, false, false, 0, 0, "");
        }
        RebuildingFilter f = filter;
        FilterScan s = scan;
        long memory = reservedBytes.get();
        long scanned = s == null ? 0 : s.keysScanned;
        if (f != null && trusted) {
            return new FilterStatus(
                    FilterStatus.State.AVAILABLE,
                    f.version(),
                    memory,
                    savedBytes,
                    f.estimatedFpp(),
                    s != null,
                    queued,
                    scanned,
                    f.liveKeysAtBuild(),
                    "");
        }
        return new FilterStatus(
                s != null ? FilterStatus.State.REBUILDING : FilterStatus.State.UNAVAILABLE,
                0,
                memory,
                savedBytes,
                0,
                s != null,
                queued,
                scanned,
                0,
                unavailableReason);
    }

    Shard shard() {
        return shard;
    }

    @Override
    public String toString() {
        return shard.toString();
    }
}
