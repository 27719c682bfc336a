package io.taishan.kv.server.storage;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.WriteOp;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One shard of a table on this node: the unit of everything a client sees (leases and fencing,
 * reads and writes, snapshots, TTL expiry, its Bloom filter), stored as a key range of one {@link
 * RangeStore} of its table. This class holds its lease (epoch), which store holds it, whether it
 * changed since that store's last cut, its owner's TTL clock and its {@link ShardFilter}, and
 * serves the reads; writes, opens and restores of several shards at once go through {@link
 * TableStore}.
 *
 * <p>Every data call holds the table's read lock from its epoch check to its end, so no lease or
 * store changes under it ({@link TableStore} changes them under the write lock).
 */
public final class Shard {
    private static final Logger LOG = LoggerFactory.getLogger(Shard.class);

    /**
     * What a bounded read answers, by identity, for a value larger than the caller may take inline
     * (to be read with {@link #get} under the large-value budget).
     */
    public static final byte[] CHUNKED = RangeDb.CHUNKED;

    /** What {@link #getIfReady} returns for a read that would have had to wait. */
    public static final byte[] NOT_READY = new byte[0];

    /**
     * The largest value an expiry sweep reads whole (a list); larger ones are never expired by the
     * server (Flink's TTL wrapper still hides their expired elements).
     */
    static final int SWEEP_MAX_INLINE = 1 << 20;

    private final TableStore table;
    private final int id;
    private final ShardFilter filter;

    /** Written under the table's write lock. */
    private volatile long epoch;

    /** The store holding the shard's range, null before it was first opened; as {@link #epoch}. */
    @Nullable private volatile RangeStore store;

    /**
     * The cut whose content for this shard equals the live data, or -1 when unknown: a snapshot
     * marker then references it instead of cutting again. Under the store's writer lock or the
     * table's write lock.
     */
    private long cleanCut = -1;

    /**
     * Wall-clock time of the last lease, write or TTL clock report since the node started, 0 before
     * the first; what {@link #lastActiveMillis} adds to what is on disk. Reads leave it alone.
     */
    private volatile long lastActivityMillis;

    private final Object ttlClockMonitor = new Object();
    private long ttlClockEpoch;
    private long ttlClockMillis;

    Shard(TableStore table, int id) {
        this.table = table;
        this.id = id;
        this.filter = new ShardFilter(this, table.engine().filters());
    }

    public int id() {
        return id;
    }

    /** The shard's number, as the protocol names it. */
    public int shard() {
        return id;
    }

    public String tableName() {
        return table.name();
    }

    TableStore table() {
        return table;
    }

    ShardFilter filter() {
        return filter;
    }

    public long epoch() {
        return epoch;
    }

    /** Whether the store holding the shard is open. */
    public boolean isOpen() {
        RangeStore s = store;
        return s != null && s.isOpen();
    }

    @Nullable
    RangeStore store() {
        return store;
    }

    @Nullable
    RangeStore storeIfOpen() {
        RangeStore s = store;
        return s != null && s.isOpen() ? s : null;
    }

    /** Under the table's write lock: the shard now has this lease and lives in this store. */
    void assign(long newEpoch, @Nullable RangeStore newStore, long newCleanCut) {
        epoch = newEpoch;
        store = newStore;
        cleanCut = newCleanCut;
        lastActivityMillis = System.currentTimeMillis();
    }

    /** At load: the lease and store on disk. */
    void load(long loadedEpoch, @Nullable RangeStore loadedStore) {
        epoch = loadedEpoch;
        store = loadedStore;
    }

    long cleanCut() {
        return cleanCut;
    }

    void cleanCut(long cutId) {
        cleanCut = cutId;
    }

    void touched() {
        lastActivityMillis = System.currentTimeMillis();
    }

    boolean usable() {
        return !table.isDropped() && !table.isShutDown() && !table.engine().isClosed();
    }

    // ---- reads

    @Nullable
    public byte[] get(long callerEpoch, byte[] key) {
        return read(callerEpoch, "get", db -> db.get(id, key));
    }

    public List<byte[]> multiGet(long callerEpoch, List<byte[]> keys) {
        return read(callerEpoch, "multi-get", db -> db.multiGet(id, keys));
    }

    /** {@link #get}, but a value larger than {@code maxInline} is {@link #CHUNKED}. */
    @Nullable
    public byte[] getInline(long callerEpoch, byte[] key, int maxInline) {
        return read(callerEpoch, "get", db -> db.getInline(id, key, maxInline));
    }

    /** The value's size, -1 if absent, without reading it onto the heap. */
    public long valueSize(long callerEpoch, byte[] key) {
        return read(callerEpoch, "get", db -> db.valueSize(id, key));
    }

    /**
     * {@link #multiGet} with values larger than {@code maxInline}, or than what is left of {@code
     * maxTotalInline}, as {@link #CHUNKED}.
     */
    public List<byte[]> multiGetInline(
            long callerEpoch, List<byte[]> keys, int maxInline, long maxTotalInline) {
        return read(
                callerEpoch,
                "multi-get",
                db -> db.multiGetInline(id, keys, maxInline, maxTotalInline));
    }

    /** {@link #scan} with values larger than {@code maxInline} as {@link #CHUNKED}. */
    public ScanPage scanInline(
            long callerEpoch,
            byte[] start,
            byte[] end,
            byte[] prefix,
            int maxEntries,
            long maxBytes,
            boolean keysOnly,
            int maxInline) {
        return read(
                callerEpoch,
                "scan",
                db ->
                        db.scan(
                                id,
                                start,
                                end,
                                prefix,
                                maxEntries,
                                maxBytes,
                                keysOnly,
                                maxInline,
                                0));
    }

    /**
     * One page of {@code [start, end)} restricted to {@code prefix} (empty: unbounded), in unsigned
     * byte order; at least one entry when any exists.
     */
    public ScanPage scan(
            long callerEpoch,
            byte[] start,
            byte[] end,
            byte[] prefix,
            int maxEntries,
            long maxBytes,
            boolean keysOnly) {
        return scanInline(
                callerEpoch, start, end, prefix, maxEntries, maxBytes, keysOnly, Integer.MAX_VALUE);
    }

    /**
     * {@link #get} unless it would wait: for the table's lock held by whatever changes leases or
     * closes stores, or for the store to be opened. The service reads on a network thread with
     * this, and on its pool when it answers {@link #NOT_READY}.
     *
     * @return the value, null if absent, or {@link #NOT_READY} (by identity)
     */
    @Nullable
    public byte[] getIfReady(long callerEpoch, byte[] key) {
        return getIfReady(callerEpoch, key, Integer.MAX_VALUE);
    }

    /** {@link #getIfReady(long, byte[])} with a value larger than {@code maxInline} chunked. */
    @Nullable
    public byte[] getIfReady(long callerEpoch, byte[] key, int maxInline) {
        if (!tryReadLock()) {
            return NOT_READY;
        }
        try {
            RangeDb db = openDb();
            if (db == null) {
                return NOT_READY;
            }
            checkUsable();
            checkEpoch(callerEpoch);
            return maxInline == Integer.MAX_VALUE
                    ? db.get(id, key)
                    : db.getInline(id, key, maxInline);
        } catch (RocksDBException e) {
            throw KvServerException.storage("get on " + this, e);
        } finally {
            table.lock().readLock().unlock();
        }
    }

    /** {@link #multiGet} unless it would wait (see {@link #getIfReady}); null then. */
    @Nullable
    public List<byte[]> multiGetIfReady(long callerEpoch, List<byte[]> keys) {
        return multiGetIfReady(callerEpoch, keys, Integer.MAX_VALUE, Long.MAX_VALUE);
    }

    /** {@link #multiGetInline} unless it would wait (see {@link #getIfReady}); null then. */
    @Nullable
    public List<byte[]> multiGetIfReady(
            long callerEpoch, List<byte[]> keys, int maxInline, long maxTotalInline) {
        if (!tryReadLock()) {
            return null;
        }
        try {
            RangeDb db = openDb();
            if (db == null) {
                return null;
            }
            checkUsable();
            checkEpoch(callerEpoch);
            return maxInline == Integer.MAX_VALUE
                    ? db.multiGet(id, keys)
                    : db.multiGetInline(id, keys, maxInline, maxTotalInline);
        } catch (RocksDBException e) {
            throw KvServerException.storage("multi-get on " + this, e);
        } finally {
            table.lock().readLock().unlock();
        }
    }

    @Nullable
    private RangeDb openDb() {
        RangeStore s = store;
        if (s == null) {
            return null;
        }
        RangeDb db = s.dbIfOpen();
        if (db != null) {
            s.touch();
        }
        return db;
    }

    /**
     * The read lock if it is free now; like {@code lock()} (unlike {@code tryLock()}) it yields to
     * a queued writer, so that a stream of reads cannot starve a restore.
     */
    private boolean tryReadLock() {
        try {
            return table.lock().readLock().tryLock(0, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    interface RocksCall<T> {
        T apply(RangeDb db) throws RocksDBException;
    }

    private <T> T read(long callerEpoch, String what, RocksCall<T> call) {
        table.lock().readLock().lock();
        try {
            checkUsable();
            checkEpoch(callerEpoch);
            return call.apply(liveDb());
        } catch (RocksDBException e) {
            throw KvServerException.storage(what + " on " + this, e);
        } finally {
            table.lock().readLock().unlock();
        }
    }

    /** The open instance of the shard's store; under a table lock, with a lease checked. */
    RangeDb liveDb() throws RocksDBException {
        RangeStore s = store;
        if (s == null) {
            throw new KvServerException(
                    ErrorCode.STORAGE_ERROR, this + " is leased but has no store");
        }
        return s.db();
    }

    // ---- writes (one shard; several go through TableStore.write)

    /**
     * Applies {@code ops} in order as {@link TableStore#write} does for one shard.
     *
     * @return the snapshots the markers took, in order
     */
    public List<SnapshotMeta> write(long callerEpoch, List<WriteOp> ops) {
        return table.write(List.of(new TableWrite.ShardOps(id, callerEpoch, ops)), x -> null)
                .snapshots()
                .get(0);
    }

    /** A snapshot of the shard now, as a marker at the end of its write order. */
    public SnapshotMeta snapshot(long callerEpoch, long snapshotId, boolean pinned) {
        return table.snapshot(List.of(new long[] {id, callerEpoch}), snapshotId, pinned).get(0);
    }

    // ---- ownership of one shard (several go through TableStore)

    /** Takes ownership under the unnamed writer: a new epoch, persisted before it is returned. */
    public long open() {
        return table.openShards("", new int[] {id}, false)[0];
    }

    /** Rolls the shard back to one of its snapshots; returns the new epoch. */
    public long restore(long snapshotId) {
        return table.restoreShards(
                        "", List.of(new TableStore.Restore(id, table, snapshotId)), false)[0];
    }

    /** Replaces the shard's data with {@code source}'s snapshot; returns the new epoch. */
    public long cloneFrom(Shard source, long snapshotId) {
        return table.restoreShards(
                        "", List.of(new TableStore.Restore(id, source.table, snapshotId)), false)[
                0];
    }

    // ---- snapshot catalog

    @Nullable
    public SnapshotMeta snapshot(long snapshotId) {
        return table.catalog().snapshot(id, snapshotId);
    }

    public List<SnapshotMeta> snapshots() {
        return table.catalog().snapshots(id);
    }

    /** Drops a snapshot, pinned or not; false if there was none with that id. */
    public boolean dropSnapshot(long snapshotId) {
        return table.catalog().drop(id, snapshotId);
    }

    /** Drops every unpinned snapshot with an id below {@code watermark}; returns how many. */
    public int dropSnapshotsBelow(long watermark) {
        java.util.BitSet one = new java.util.BitSet();
        one.set(id);
        return table.catalog().dropBelow(watermark, one);
    }

    // ---- expiry of TTL'd state (see ExpirySweeper)

    /** The owner reports its TTL clock; a stale lease is fenced like any data call. */
    public void reportTtlTime(long callerEpoch, long ttlTimeMillis) {
        table.lock().readLock().lock();
        try {
            checkUsable();
            checkEpoch(callerEpoch);
            lastActivityMillis = System.currentTimeMillis();
            synchronized (ttlClockMonitor) {
                if (ttlClockEpoch != callerEpoch) {
                    ttlClockEpoch = callerEpoch;
                    ttlClockMillis = ttlTimeMillis;
                } else {
                    // A clock that goes back (another TaskManager's) never undoes expiry progress.
                    ttlClockMillis = Math.max(ttlClockMillis, ttlTimeMillis);
                }
            }
        } finally {
            table.lock().readLock().unlock();
        }
    }

    /**
     * The owner's TTL time if it was reported under the current lease, else -1: after a restore or
     * reopen nothing expires until the new owner reports.
     */
    long ttlClockForSweep() {
        synchronized (ttlClockMonitor) {
            return ttlClockEpoch != 0 && ttlClockEpoch == epoch ? ttlClockMillis : -1;
        }
    }

    /**
     * A sweep's page of the live data under {@code prefix} from {@code start}, values bounded:
     * {@link #CHUNKED} above {@code maxInline}, or only their first {@code valuePrefixBytes} bytes
     * when that is set; null when the shard is gone or no longer has the lease {@code
     * expectedEpoch}.
     */
    @Nullable
    ScanPage sweepPage(
            byte[] start,
            byte[] prefix,
            int maxEntries,
            long maxBytes,
            long expectedEpoch,
            int maxInline,
            int valuePrefixBytes) {
        table.lock().readLock().lock();
        try {
            if (!usable() || epoch != expectedEpoch || store == null) {
                return null;
            }
            return liveDb().scan(
                            id,
                            start,
                            new byte[0],
                            prefix,
                            maxEntries,
                            maxBytes,
                            false,
                            maxInline,
                            valuePrefixBytes);
        } catch (RocksDBException e) {
            throw KvServerException.storage("expiry scan of " + this, e);
        } finally {
            table.lock().readLock().unlock();
        }
    }

    /**
     * Deletes those of {@code keys} whose current value is expired at {@code ttlNow}, reading and
     * deleting under the store's writer lock, so a write that landed after the sweep's page was
     * read is seen and kept: the check and the delete are one step in the shard's write order.
     * Nothing is deleted once the shard has another lease than {@code expectedEpoch}.
     *
     * @return how many were deleted
     */
    int deleteStillExpired(List<byte[]> keys, StateTtl ttl, long ttlNow, long expectedEpoch) {
        if (keys.isEmpty()) {
            return 0;
        }
        table.lock().readLock().lock();
        try {
            RangeStore s = store;
            if (!usable() || epoch != expectedEpoch || s == null) {
                return 0;
            }
            s.writerLock().lock();
            try (WriteBatch batch = new WriteBatch()) {
                RangeDb db = s.db();
                int deleted = 0;
                for (byte[] key : keys) {
                    // Only what the check needs: a large value is never read whole here.
                    byte[] value =
                            ttl.layout() == StateTtl.Layout.LIST
                                    ? db.getInline(id, key, SWEEP_MAX_INLINE)
                                    : db.getPrefix(id, key, StateTtl.TIMESTAMP_PREFIX_BYTES);
                    if (value != null && value != CHUNKED && ttl.expired(value, ttlNow)) {
                        batch.delete(RangeDb.key(id, key));
                        deleted++;
                    }
                }
                if (deleted > 0) {
                    cleanCut = -1;
                    db.write(batch);
                }
                return deleted;
            } finally {
                s.writerLock().unlock();
            }
        } catch (RocksDBException e) {
            throw KvServerException.storage("expiry of " + this, e);
        } finally {
            table.lock().readLock().unlock();
        }
    }

    // ---- filter

    /**
     * A copy of the shard's filter for a client under {@code callerEpoch}, opening the store if
     * needed; the caller closes it.
     *
     * @throws KvServerException FENCED for a stale epoch, FILTER_UNAVAILABLE while the shard has no
     *     filter it can vouch for
     */
    public FilterCopy copyFilter(long callerEpoch) {
        table.lock().readLock().lock();
        try {
            checkUsable();
            checkEpoch(callerEpoch);
            liveDb();
            return filter.copyToServe(callerEpoch);
        } catch (RocksDBException e) {
            throw KvServerException.storage("filter fetch of " + this, e);
        } finally {
            table.lock().readLock().unlock();
        }
    }

    /** The version of the filter served now, or -1 while there is none. */
    public long filterVersion() {
        return filter.servedVersion();
    }

    /** The filter's state for the admin CLI; never opens the store. */
    public FilterStatus filterStatus() {
        table.lock().readLock().lock();
        try {
            RangeStore s = store;
            boolean open = s != null && s.isOpen();
            FilterStatus.State closedState = FilterStatus.State.EMPTY;
            if (!open && s != null) {
                closedState =
                        s.hasSavedFilter(id)
                                ? FilterStatus.State.SAVED
                                : s.hasData()
                                        ? FilterStatus.State.MISSING
                                        : FilterStatus.State.EMPTY;
            }
            return filter.status(open, closedState, s == null ? 0 : s.savedFilterBytes());
        } finally {
            table.lock().readLock().unlock();
        }
    }

    // ---- activity

    /**
     * When the shard was last leased, written or had its TTL clock reported (epoch millis, 0 if
     * never), as far as this node can tell; never opens the store. Calls since the node started are
     * remembered; earlier ones are read from what they left on disk: the table's lease record
     * (rewritten at every lease), the shard's newest snapshot and the newest file of its store's
     * live data. A restart therefore does not make a table look idle.
     */
    public long lastActiveMillis() {
        long newest = lastActivityMillis;
        newest = Math.max(newest, table.leasesWrittenMillis());
        newest = Math.max(newest, table.catalog().newestSnapshotMillis(id));
        RangeStore s = store;
        if (s != null && Files.isDirectory(s.liveDir())) {
            try (DirectoryStream<Path> files = Files.newDirectoryStream(s.liveDir())) {
                for (Path f : files) {
                    newest = Math.max(newest, modifiedMillis(f));
                }
            } catch (IOException e) {
                LOG.debug("Cannot list {}: {}", s.liveDir(), e.toString());
            }
        }
        return newest;
    }

    static long modifiedMillis(Path file) {
        try {
            return Files.getLastModifiedTime(file).toMillis();
        } catch (IOException e) {
            return 0;
        }
    }

    // ---- checks

    void checkUsable() {
        if (table.isDropped()) {
            throw KvServerException.tableNotFound(table.name());
        }
        if (table.isShutDown() || table.engine().isClosed()) {
            throw KvServerException.shuttingDown();
        }
    }

    void checkEpoch(long callerEpoch) {
        long current = epoch;
        long floor = table.engine().leaseFloor();
        if (callerEpoch == current && current > 0 && current >= floor) {
            return;
        }
        String why;
        if (current == 0) {
            why = "the shard was never opened (call OpenShard first)";
        } else if (callerEpoch == current) {
            why =
                    "the kv-server stopped uncleanly since this lease was issued and may have lost"
                            + " writes acknowledged under it; restore the shard from a snapshot"
                            + " (its last checkpoint)";
        } else {
            why = "the current epoch is " + current + " (the shard was reopened)";
        }
        throw new KvServerException(
                ErrorCode.FENCED, this + ": epoch " + callerEpoch + " is not current; " + why);
    }

    @Override
    public String toString() {
        return "table '" + table.name() + "' shard " + id;
    }
}
