package io.taishan.kv.server.storage;

import io.taishan.bloom.FilterGeometry;
import io.taishan.bloom.KeyHash;
import io.taishan.bloom.RebuildingFilter;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.WriteOp;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongFunction;
import javax.annotation.Nullable;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One shard of one table: its epoch, its live RocksDB instance (opened lazily, closed when idle)
 * and its snapshots.
 *
 * <p>Locking. {@code state} read-locked by every data call (the epoch check and the call are then
 * atomic against a reopen), write-locked by whatever changes the epoch or the live instance
 * (OpenShard, Restore, Clone, close, drop): once a new epoch is handed out, no call with the old
 * one is still running or can start. {@code writer} orders writes and snapshots of the shard, so a
 * snapshot marker cuts exactly at its place. {@code snapshotsLock} guards the snapshot set alone,
 * so a clone may read a source snapshot while the source keeps writing. Order: state, writer,
 * snapshotsLock; a thread holding a shard's state lock may take another shard's snapshotsLock,
 * never its state lock, except a multi-shard write, which takes state read locks in shard order.
 *
 * <p><b>Bloom filter.</b> An open shard has a {@link RebuildingFilter} of its keys, and a flag
 * saying whether the server can vouch for it ({@code filterTrusted}: it contains every key live in
 * the shard). Only a trusted filter is ever served or saved with a snapshot; an untrusted one is
 * rebuilt from a key scan in the background ({@link #rebuildFilter}). Where it comes from when the
 * shard opens:
 *
 * <ul>
 *   <li>{@code live/TAISHAN-FILTER}, written at a clean close (after the flush) and unlinked
 *       (durably) before the first put or merge after it was loaded, so a file that exists covers
 *       the live data, whatever kind of stop came since. Restore and clone bring the snapshot's
 *       file into {@code live/} with its SSTs (a hard link: no copy).
 *   <li>No file and no RocksDB data yet: an empty filter is complete.
 *   <li>No file but data (an unclean stop after a write, a snapshot from before filters, a file
 *       that does not read): no filter until a rebuild finished.
 * </ul>
 *
 * Puts and merges are inserted after RocksDB applied them and before the write returns, under the
 * writer lock; deletes are not (false positives until the next rebuild, never false negatives), nor
 * are scan-only puts (keys never looked up, see {@code Put.scan_only}: the filter covers every key
 * a lookup can ask for, and a saved file stays valid across such a put).
 */
public final class ShardStore {
    private static final Logger LOG = LoggerFactory.getLogger(ShardStore.class);

    private final StorageEngine engine;
    private final String table;
    private final int shard;
    private final Path dir;
    private final Path liveDir;
    private final Path stagedLiveDir;
    private final Path snapshotsDir;
    private final Path epochFile;
    private final Path filterFile;

    private final ReentrantReadWriteLock state = new ReentrantReadWriteLock();
    private final ReentrantLock writer = new ReentrantLock();
    private final ReentrantReadWriteLock snapshotsLock = new ReentrantReadWriteLock();
    private final Object liveMonitor = new Object();

    /** Guarded by state: written under its write lock. */
    private volatile long epoch;

    /**
     * Written under liveMonitor; closed only under the state write lock, so a holder of the read
     * lock that sees it set may use it without the monitor ({@link #getIfReady}).
     */
    @Nullable private volatile ShardDb live;

    /** Guarded by snapshotsLock. */
    private final NavigableMap<Long, SnapshotMeta> snapshots = new TreeMap<>();

    /**
     * The snapshot whose content equals the live data, or null when unknown; guarded by writer or
     * by the state write lock.
     */
    @Nullable private Long unchangedSince;

    /** Guarded by state: written under its write lock. */
    private volatile boolean dropped;

    private volatile boolean shutDown;
    private volatile long lastAccessNanos = System.nanoTime();

    /**
     * Wall-clock time of the last lease, write or TTL clock report on this node since it started, 0
     * before the first: what {@link #lastActiveMillis} adds to what is on disk. Reads leave it
     * alone, so that the inline reads on the event loop do not all write one shared field.
     */
    private volatile long lastActivityMillis;

    /**
     * The open shard's filter, null while the shard is closed or has none. Set by the opener (under
     * liveMonitor and a state lock), by a rebuild from scratch (under the writer lock), cleared
     * under the state write lock or, for a failed rebuild, the writer lock.
     */
    @Nullable private volatile RebuildingFilter filter;

    /** Whether {@link #filter} contains every key live in the shard: only then is it served. */
    private volatile boolean filterTrusted;

    /**
     * Whether {@code live/TAISHAN-FILTER} exists and covers the live data. Guarded by writer or the
     * state write lock (and set by the opener before any write can see the shard open).
     */
    private volatile boolean filterFileValid;

    /** Why the open shard has no filter to serve, for errors and the admin CLI. */
    private volatile String filterUnavailableReason = "";

    /** Off-heap bytes this shard has reserved of the node's filter limit. */
    private final AtomicLong filterReservedBytes = new AtomicLong();

    private final AtomicBoolean rebuildQueued = new AtomicBoolean();

    /**
     * The running rebuild scan; set and cleared under a state lock, cancelled under its write lock.
     */
    @Nullable private volatile FilterScan scan;

    /** No rebuild is started before this (after one failed or found no memory). */
    private volatile long rebuildNotBeforeNanos;

    /**
     * The last rebuild scanned more keys than its filter holds at the target rate: RocksDB's key
     * estimate it was sized by was low. The next one is sized by the keys scanned, so this asks for
     * it at once instead of after the next quarter of the capacity in new keys.
     */
    private volatile boolean rebuildUndersized;

    ShardStore(StorageEngine engine, String table, int shard, Path dir) throws IOException {
        this.engine = engine;
        this.table = table;
        this.shard = shard;
        this.dir = dir;
        this.liveDir = dir.resolve("live");
        this.stagedLiveDir = dir.resolve("live.new");
        this.snapshotsDir = dir.resolve("snapshots");
        this.epochFile = dir.resolve("epoch");
        this.filterFile = liveDir.resolve(FilterFiles.FILE_NAME);
        recover();
    }

    public String table() {
        return table;
    }

    public int shard() {
        return shard;
    }

    public long epoch() {
        return epoch;
    }

    public boolean isOpen() {
        synchronized (liveMonitor) {
            return live != null;
        }
    }

    // ---- ownership

    /** Takes ownership: a new epoch, persisted before it is returned. */
    public long open() {
        state.writeLock().lock();
        try {
            checkUsable();
            return bumpEpoch();
        } finally {
            state.writeLock().unlock();
        }
    }

    // ---- reads

    @Nullable
    public byte[] get(long callerEpoch, byte[] key) {
        return read(callerEpoch, "get", db -> db.get(key));
    }

    public List<byte[]> multiGet(long callerEpoch, List<byte[]> keys) {
        return read(callerEpoch, "multi-get", db -> db.multiGet(keys));
    }

    /**
     * What a bounded read answers, by identity, for a value larger than the caller may take inline
     * (to be read with {@link #get} under the large-value budget).
     */
    public static final byte[] CHUNKED = ShardDb.CHUNKED;

    /** {@link #get}, but a value larger than {@code maxInline} is {@link #CHUNKED}. */
    @Nullable
    public byte[] getInline(long callerEpoch, byte[] key, int maxInline) {
        return read(callerEpoch, "get", db -> db.getInline(key, maxInline));
    }

    /** The value's size, -1 if absent, without reading it onto the heap. */
    public long valueSize(long callerEpoch, byte[] key) {
        return read(callerEpoch, "get", db -> db.valueSize(key));
    }

    /**
     * {@link #multiGet} with values larger than {@code maxInline}, or than what is left of {@code
     * maxTotalInline}, as {@link #CHUNKED}.
     */
    public List<byte[]> multiGetInline(
            long callerEpoch, List<byte[]> keys, int maxInline, long maxTotalInline) {
        return read(
                callerEpoch, "multi-get", db -> db.multiGetInline(keys, maxInline, maxTotalInline));
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
                db -> db.scan(start, end, prefix, maxEntries, maxBytes, keysOnly, maxInline, 0));
    }

    public ScanPage scan(
            long callerEpoch,
            byte[] start,
            byte[] end,
            byte[] prefix,
            int maxEntries,
            long maxBytes,
            boolean keysOnly) {
        return read(
                callerEpoch,
                "scan",
                db -> db.scan(start, end, prefix, maxEntries, maxBytes, keysOnly));
    }

    /** What {@link #getIfReady} returns for a read that would have had to wait. */
    public static final byte[] NOT_READY = new byte[0];

    /**
     * {@link #get} unless it would wait: for a lock held by whatever changes the epoch or the live
     * instance (a restore, a clone, an idle close), or for the shard's RocksDB instance and filter
     * to be opened. The service reads on a network thread with this, and on its pool when it
     * answers {@link #NOT_READY}.
     *
     * @return the value, null if absent, or {@link #NOT_READY} (by identity)
     */
    @Nullable
    public byte[] getIfReady(long callerEpoch, byte[] key) {
        return getIfReady(callerEpoch, key, Integer.MAX_VALUE);
    }

    /**
     * {@link #getIfReady(long, byte[])} with a value larger than {@code maxInline} {@link
     * #CHUNKED}.
     */
    @Nullable
    public byte[] getIfReady(long callerEpoch, byte[] key, int maxInline) {
        if (!tryReadLock()) {
            return NOT_READY;
        }
        try {
            ShardDb db = live;
            if (db == null) {
                return NOT_READY;
            }
            checkUsable();
            checkEpoch(callerEpoch);
            lastAccessNanos = System.nanoTime();
            return maxInline == Integer.MAX_VALUE ? db.get(key) : db.getInline(key, maxInline);
        } catch (RocksDBException e) {
            throw KvServerException.storage("get on " + this, e);
        } finally {
            state.readLock().unlock();
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
            ShardDb db = live;
            if (db == null) {
                return null;
            }
            checkUsable();
            checkEpoch(callerEpoch);
            lastAccessNanos = System.nanoTime();
            return maxInline == Integer.MAX_VALUE
                    ? db.multiGet(keys)
                    : db.multiGetInline(keys, maxInline, maxTotalInline);
        } catch (RocksDBException e) {
            throw KvServerException.storage("multi-get on " + this, e);
        } finally {
            state.readLock().unlock();
        }
    }

    /**
     * The read lock if it is free now; like {@code lock()} (unlike {@code tryLock()}) it yields to
     * a queued writer, so that a stream of reads cannot starve a restore.
     */
    private boolean tryReadLock() {
        try {
            return state.readLock().tryLock(0, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private interface RocksCall<T> {
        T apply(ShardDb db) throws RocksDBException;
    }

    private <T> T read(long callerEpoch, String what, RocksCall<T> call) {
        state.readLock().lock();
        try {
            checkUsable();
            checkEpoch(callerEpoch);
            return call.apply(liveDb());
        } catch (RocksDBException e) {
            throw KvServerException.storage(what + " on " + this, e);
        } finally {
            state.readLock().unlock();
        }
    }

    // ---- writes and snapshots

    /**
     * Checks the epoch and holds it valid until the session is closed (on the same thread): the
     * service opens the sessions of every shard of a request before it applies any, so a request
     * with one stale epoch changes nothing.
     */
    public WriteSession beginWrite(long callerEpoch) {
        state.readLock().lock();
        try {
            checkUsable();
            checkEpoch(callerEpoch);
            return new WriteSession();
        } catch (RuntimeException e) {
            state.readLock().unlock();
            throw e;
        }
    }

    /** The right to write a shard at a checked epoch. */
    public final class WriteSession implements AutoCloseable {
        private boolean closed;

        private WriteSession() {}

        /**
         * Applies the ops in order: the ops between two snapshot markers as one atomic RocksDB
         * batch, then the snapshot. Ops must have been validated.
         *
         * @return the snapshots the markers took, in order
         */
        public List<SnapshotMeta> apply(List<WriteOp> ops) {
            return apply(ops, id -> null);
        }

        /**
         * {@link #apply(List)} where a Put or Append naming a staged value ({@code
         * staged_value_id}) writes {@code staged.apply(id)}, which the service took out of its
         * staging area when it validated the request.
         */
        public List<SnapshotMeta> apply(List<WriteOp> ops, LongFunction<byte[]> staged) {
            writer.lock();
            try {
                lastActivityMillis = System.currentTimeMillis();
                return applyLocked(ops, staged);
            } finally {
                writer.unlock();
            }
        }

        public SnapshotMeta snapshot(long snapshotId, boolean pinned) {
            writer.lock();
            try {
                lastActivityMillis = System.currentTimeMillis();
                return snapshotLocked(snapshotId, pinned);
            } finally {
                writer.unlock();
            }
        }

        /** The version of the shard's filter now, or -1 while it has none it can serve. */
        public long filterVersion() {
            return servedFilterVersion();
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                state.readLock().unlock();
            }
        }
    }

    private List<SnapshotMeta> applyLocked(List<WriteOp> ops, LongFunction<byte[]> staged) {
        List<SnapshotMeta> taken = new ArrayList<>(0);
        WriteBatch batch = new WriteBatch();
        // The filter gets the keys of a batch only once RocksDB has applied it.
        long[] hashes = new long[ops.size()];
        int hashed = 0;
        try {
            for (WriteOp op : ops) {
                switch (op.getOpCase()) {
                    case PUT -> {
                        byte[] key = op.getPut().getKey().toByteArray();
                        long stagedId = op.getPut().getStagedValueId();
                        batch.put(
                                key,
                                stagedId != 0
                                        ? stagedValue(staged, stagedId)
                                        : op.getPut().getValue().toByteArray());
                        if (!op.getPut().getScanOnly()) {
                            hashes[hashed++] = KeyHash.hash(key);
                        }
                    }
                    case DELETE -> batch.delete(op.getDelete().getKey().toByteArray());
                    case DELETE_RANGE -> {
                        byte[] begin = op.getDeleteRange().getBeginKey().toByteArray();
                        byte[] end = op.getDeleteRange().getEndKey().toByteArray();
                        if (Arrays.compareUnsigned(begin, end) < 0) {
                            batch.deleteRange(begin, end);
                        }
                    }
                    case APPEND -> {
                        byte[] key = op.getAppend().getKey().toByteArray();
                        long stagedId = op.getAppend().getStagedValueId();
                        batch.merge(
                                key,
                                stagedId != 0
                                        ? stagedValue(staged, stagedId)
                                        : op.getAppend().getValue().toByteArray());
                        hashes[hashed++] = KeyHash.hash(key);
                    }
                    case SNAPSHOT -> {
                        commit(batch, hashes, hashed);
                        hashed = 0;
                        batch.close();
                        batch = new WriteBatch();
                        taken.add(
                                snapshotLocked(
                                        op.getSnapshot().getSnapshotId(),
                                        op.getSnapshot().getPinned()));
                    }
                    default ->
                            throw KvServerException.invalid(
                                    "empty write op for " + this + ": no op set");
                }
            }
            commit(batch, hashes, hashed);
            requestRebuildIfDue();
            return taken;
        } catch (RocksDBException e) {
            throw KvServerException.storage("write to " + this, e);
        } finally {
            batch.close();
        }
    }

    private byte[] stagedValue(LongFunction<byte[]> staged, long id) {
        byte[] value = staged.apply(id);
        if (value == null) {
            throw KvServerException.invalid(
                    "write to " + this + " names staged value " + id + ", which was not taken");
        }
        return value;
    }

    private void commit(WriteBatch batch, long[] hashes, int hashed) throws RocksDBException {
        if (batch.count() == 0) {
            return;
        }
        unchangedSince = null;
        ShardDb db = liveDb();
        if (hashed > 0 && filterFileValid) {
            invalidateFilterFile();
        }
        db.write(batch);
        RebuildingFilter f = filter;
        if (f != null) {
            for (int i = 0; i < hashed; i++) {
                f.insert(hashes[i]);
            }
        }
    }

    /**
     * The saved filter no longer covers the live data once a key is added, so it goes (durably)
     * before the write: whatever stop comes next, a file that exists is right.
     */
    private void invalidateFilterFile() {
        try {
            Files.deleteIfExists(filterFile);
            DurableFiles.fsync(liveDir);
            filterFileValid = false;
        } catch (IOException e) {
            throw KvServerException.storage(
                    "cannot remove the saved filter " + filterFile + " of " + this, e);
        }
    }

    private SnapshotMeta snapshotLocked(long snapshotId, boolean pinned) {
        SnapshotMeta existing = snapshot(snapshotId);
        if (existing != null) {
            return existing;
        }
        Path staging = snapshotsDir.resolve(".tmp-" + snapshotId + "-" + System.nanoTime());
        try {
            Files.createDirectories(snapshotsDir);
            boolean reused = linkUnchangedSnapshot(staging);
            if (!reused) {
                liveDb().checkpoint(staging);
                // Copied here, under the writer lock, at the checkpoint's point of the writes.
                writeFilterInto(staging);
                DurableFiles.fsyncFilesAndDir(staging);
            }
            List<Path> files = DurableFiles.listFiles(staging);
            long size = 0;
            for (Path f : files) {
                size += Files.size(f);
            }
            SnapshotMeta meta =
                    new SnapshotMeta(
                            snapshotId,
                            pinned,
                            System.currentTimeMillis(),
                            size,
                            files.size(),
                            reused);
            DurableFiles.writeAtomically(staging.resolve(SnapshotMeta.FILE_NAME), meta.toBytes());
            snapshotsLock.writeLock().lock();
            try {
                DurableFiles.moveAtomically(staging, snapshotDir(snapshotId));
                snapshots.put(snapshotId, meta);
            } finally {
                snapshotsLock.writeLock().unlock();
            }
            unchangedSince = snapshotId;
            return meta;
        } catch (IOException | RocksDBException e) {
            deleteQuietly(staging);
            throw KvServerException.storage(
                    "snapshot " + snapshotId + " of " + this + " failed", e);
        }
    }

    /** Links the files of the snapshot equal to the live data, if there is one still. */
    private boolean linkUnchangedSnapshot(Path staging) throws IOException {
        Long base = unchangedSince;
        if (base == null) {
            return false;
        }
        snapshotsLock.readLock().lock();
        try {
            if (!snapshots.containsKey(base)) {
                return false;
            }
            Files.createDirectories(staging);
            // Snapshot directories are never opened by RocksDB, so even MANIFEST can be shared.
            DurableFiles.linkFiles(
                    snapshotDir(base), staging, true, n -> n.equals(SnapshotMeta.FILE_NAME));
            return true;
        } finally {
            snapshotsLock.readLock().unlock();
        }
    }

    // ---- restore and clone

    /** Rolls the live data back to a snapshot of this shard; returns the new epoch. */
    public long restore(long snapshotId) {
        state.writeLock().lock();
        try {
            checkUsable();
            stageFrom(this, snapshotId);
            replaceLive();
            unchangedSince = snapshotId;
            return bumpEpoch();
        } catch (IOException | RocksDBException e) {
            deleteQuietly(stagedLiveDir);
            throw KvServerException.storage(
                    "restore of " + this + " to snapshot " + snapshotId + " failed", e);
        } finally {
            state.writeLock().unlock();
        }
    }

    /**
     * Replaces the live data with a snapshot of {@code source} (another table's shard), which keeps
     * serving meanwhile; returns the new epoch.
     */
    public long cloneFrom(ShardStore source, long snapshotId) {
        if (source == this) {
            return restore(snapshotId);
        }
        state.writeLock().lock();
        try {
            checkUsable();
            stageFrom(source, snapshotId);
            replaceLive();
            unchangedSince = null;
            return bumpEpoch();
        } catch (IOException | RocksDBException e) {
            deleteQuietly(stagedLiveDir);
            throw KvServerException.storage(
                    "clone of snapshot "
                            + snapshotId
                            + " of "
                            + source
                            + " into "
                            + this
                            + " failed",
                    e);
        } finally {
            state.writeLock().unlock();
        }
    }

    /** Builds {@code live.new} from the snapshot's files; fails before touching the live data. */
    private void stageFrom(ShardStore source, long snapshotId) throws IOException {
        DurableFiles.deleteTree(stagedLiveDir);
        source.snapshotsLock.readLock().lock();
        try {
            if (source.dropped || !source.snapshots.containsKey(snapshotId)) {
                throw KvServerException.snapshotNotFound(source.table, source.shard, snapshotId);
            }
            Files.createDirectories(stagedLiveDir);
            DurableFiles.linkFiles(
                    source.snapshotDir(snapshotId),
                    stagedLiveDir,
                    false,
                    n -> n.equals(SnapshotMeta.FILE_NAME));
        } finally {
            source.snapshotsLock.readLock().unlock();
        }
    }

    private void replaceLive() throws IOException, RocksDBException {
        closeLive(false);
        DurableFiles.discard(liveDir, engine.trashDir());
        DurableFiles.moveAtomically(stagedLiveDir, liveDir);
    }

    // ---- snapshot catalog

    @Nullable
    public SnapshotMeta snapshot(long snapshotId) {
        snapshotsLock.readLock().lock();
        try {
            return snapshots.get(snapshotId);
        } finally {
            snapshotsLock.readLock().unlock();
        }
    }

    public List<SnapshotMeta> snapshots() {
        snapshotsLock.readLock().lock();
        try {
            return new ArrayList<>(snapshots.values());
        } finally {
            snapshotsLock.readLock().unlock();
        }
    }

    /** Drops a snapshot, pinned or not; false if there was none with that id. */
    public boolean dropSnapshot(long snapshotId) {
        snapshotsLock.writeLock().lock();
        try {
            if (snapshots.remove(snapshotId) == null) {
                return false;
            }
            DurableFiles.discard(snapshotDir(snapshotId), engine.trashDir());
            return true;
        } catch (IOException e) {
            throw KvServerException.storage(
                    "drop of snapshot " + snapshotId + " of " + this + " failed", e);
        } finally {
            snapshotsLock.writeLock().unlock();
        }
    }

    /** Drops every unpinned snapshot with an id below {@code watermark}; returns how many. */
    public int dropSnapshotsBelow(long watermark) {
        int dropped = 0;
        for (SnapshotMeta s : snapshots()) {
            if (s.snapshotId() < watermark && !s.pinned() && dropSnapshot(s.snapshotId())) {
                dropped++;
            }
        }
        return dropped;
    }

    // ---- expiry of TTL'd state (see ExpirySweeper)

    /**
     * The owner's TTL clock (milliseconds of Flink's TTL time provider), valid only with the lease
     * it was reported under: after a restore or reopen nothing expires until the new owner reports.
     * Written under the state read lock by the reporting call, compared by sweeps.
     */
    private final Object ttlClockMonitor = new Object();

    private long ttlClockEpoch;
    private long ttlClockMillis;

    /** RocksDB's estimate of the live entries, or -1 when closed (it is not opened to count). */
    public long estimatedEntriesIfOpen() {
        synchronized (liveMonitor) {
            if (live == null) {
                return -1;
            }
            try {
                return live.estimatedKeys();
            } catch (RocksDBException e) {
                return -1;
            }
        }
    }

    /**
     * Adds the open instance's RocksDB properties to a node sample (nothing if it closed since it
     * was listed); false, without waiting, when the shard's lock is held exclusively right now (a
     * restore, clone or close). The read lock keeps the instance open while it is read.
     */
    boolean addRocksProperties(RocksSample.Builder into) {
        if (!state.readLock().tryLock()) {
            return false;
        }
        try {
            ShardDb db = live;
            if (db == null) {
                return true;
            }
            db.addProperties(into);
            into.sampledShards++;
            return true;
        } catch (RocksDBException e) {
            return false;
        } finally {
            state.readLock().unlock();
        }
    }

    /** The owner reports its TTL clock; a stale lease is fenced like any data call. */
    public void reportTtlTime(long callerEpoch, long ttlTimeMillis) {
        state.readLock().lock();
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
            state.readLock().unlock();
        }
    }

    /** The owner's TTL time if it was reported under the current lease, else -1. */
    long ttlClockForSweep() {
        synchronized (ttlClockMonitor) {
            return ttlClockEpoch != 0 && ttlClockEpoch == epoch ? ttlClockMillis : -1;
        }
    }

    /**
     * One page of the live data under {@code prefix} from {@code start}, for a sweep; null when the
     * shard is gone, being shut down, or no longer has the lease {@code expectedEpoch}.
     */
    @Nullable
    ScanPage sweepPage(
            byte[] start, byte[] prefix, int maxEntries, long maxBytes, long expectedEpoch) {
        return sweepPage(start, prefix, maxEntries, maxBytes, expectedEpoch, SWEEP_MAX_INLINE, 0);
    }

    /**
     * The largest value an expiry sweep reads whole (a list); larger ones are never expired by the
     * server (Flink's TTL wrapper still hides their expired elements).
     */
    static final int SWEEP_MAX_INLINE = 1 << 20;

    /**
     * A sweep's page with values bounded: {@link #CHUNKED} above {@code maxInline}, or only their
     * first {@code valuePrefixBytes} bytes when that is set.
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
        state.readLock().lock();
        try {
            if (dropped || shutDown || engine.isClosed() || epoch != expectedEpoch) {
                return null;
            }
            return liveDb().scan(
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
            state.readLock().unlock();
        }
    }

    /**
     * Deletes those of {@code keys} whose current value is expired at {@code ttlNow}, reading and
     * deleting under the writer lock, so a write that landed after the sweep's page was read is
     * seen and kept: the check and the delete are one step in the shard's write order. Nothing is
     * deleted once the shard has another lease than {@code expectedEpoch}.
     *
     * @return how many were deleted
     */
    int deleteStillExpired(List<byte[]> keys, StateTtl ttl, long ttlNow, long expectedEpoch) {
        if (keys.isEmpty()) {
            return 0;
        }
        state.readLock().lock();
        try {
            if (dropped || shutDown || engine.isClosed() || epoch != expectedEpoch) {
                return 0;
            }
            writer.lock();
            try (WriteBatch batch = new WriteBatch()) {
                ShardDb db = liveDb();
                int deleted = 0;
                for (byte[] key : keys) {
                    // Only what the check needs: a large value is never read whole here.
                    byte[] value =
                            ttl.layout() == StateTtl.Layout.LIST
                                    ? db.getInline(key, SWEEP_MAX_INLINE)
                                    : db.getPrefix(key, StateTtl.TIMESTAMP_PREFIX_BYTES);
                    if (value != null && value != CHUNKED && ttl.expired(value, ttlNow)) {
                        batch.delete(key);
                        deleted++;
                    }
                }
                if (deleted > 0) {
                    unchangedSince = null;
                    db.write(batch);
                }
                return deleted;
            } finally {
                writer.unlock();
            }
        } catch (RocksDBException e) {
            throw KvServerException.storage("expiry of " + this, e);
        } finally {
            state.readLock().unlock();
        }
    }

    public long diskBytes() {
        return DurableFiles.sizeOf(dir);
    }

    /**
     * When the shard was last leased, written or had its TTL clock reported (epoch millis, 0 if
     * never), as far as this node can tell; never opens the shard. Calls since the node started are
     * remembered; earlier ones are read from what they left on disk: the epoch file (rewritten at
     * every lease), the newest snapshot, and the newest file of the live data (flushes, the WAL,
     * RocksDB opens and the filter saved at a close write there; the kv-server keeps no RocksDB LOG
     * that would change while nothing happens). A restart therefore does not make a table look
     * idle, and nothing this returns is earlier than the last such call.
     */
    public long lastActiveMillis() {
        state.readLock().lock();
        try {
            long newest = lastActivityMillis;
            newest = Math.max(newest, modifiedMillis(epochFile));
            snapshotsLock.readLock().lock();
            try {
                for (SnapshotMeta s : snapshots.values()) {
                    newest = Math.max(newest, s.createdAtMillis());
                }
            } finally {
                snapshotsLock.readLock().unlock();
            }
            if (Files.isDirectory(liveDir)) {
                try (DirectoryStream<Path> files = Files.newDirectoryStream(liveDir)) {
                    for (Path f : files) {
                        newest = Math.max(newest, modifiedMillis(f));
                    }
                } catch (IOException e) {
                    // Only the estimate's disk part is lost; the live data itself is not touched.
                    LOG.debug("Cannot list {}: {}", liveDir, e.toString());
                }
            }
            return newest;
        } finally {
            state.readLock().unlock();
        }
    }

    private static long modifiedMillis(Path file) {
        try {
            return Files.getLastModifiedTime(file).toMillis();
        } catch (IOException e) {
            return 0;
        }
    }

    // ---- lifecycle

    long lastAccessNanos() {
        return lastAccessNanos;
    }

    /**
     * Flushes and closes the live instance unless it is in use or was used since {@code
     * idleSinceNanos}; never blocks.
     */
    boolean tryCloseIfIdle(long idleSinceNanos) {
        if (!state.writeLock().tryLock()) {
            return false;
        }
        try {
            // A running rebuild would be lost; it ends soon, bounded by the rebuild threads.
            if (lastAccessNanos - idleSinceNanos > 0 || scan != null) {
                return false;
            }
            return closeLive(true);
        } catch (RocksDBException e) {
            LOG.warn("Could not close idle {}: {}", this, e.getMessage());
            return false;
        } finally {
            state.writeLock().unlock();
        }
    }

    /** Flushes and closes for good (server shutdown); false if the flush failed. */
    boolean shutdown() {
        state.writeLock().lock();
        try {
            shutDown = true;
            closeLive(true);
            return true;
        } catch (RocksDBException e) {
            LOG.error("Could not flush {} on shutdown: {}", this, e.getMessage());
            return false;
        } finally {
            state.writeLock().unlock();
        }
    }

    /** Closes without flushing: the table is being dropped. */
    void markDropped() {
        state.writeLock().lock();
        try {
            dropped = true;
            closeLive(false);
        } catch (RocksDBException e) {
            LOG.warn("Could not close dropped {}: {}", this, e.getMessage());
        } finally {
            state.writeLock().unlock();
        }
        snapshotsLock.writeLock().lock();
        try {
            snapshots.clear();
        } finally {
            snapshotsLock.writeLock().unlock();
        }
    }

    /**
     * Closes the live instance and its filter; with {@code flush} (idle, LRU, shutdown: the data
     * stays) the filter is saved beside the data once the data is flushed, without (restore, clone,
     * drop: the data goes) it is dropped. Under the state write lock.
     */
    private boolean closeLive(boolean flush) throws RocksDBException {
        ShardDb db;
        synchronized (liveMonitor) {
            db = live;
            live = null;
        }
        if (db == null) {
            return false;
        }
        engine.shardClosed(this);
        cancelScan();
        boolean closed = false;
        try {
            db.close(flush);
            closed = true;
        } finally {
            closeFilter(flush && closed);
        }
        return true;
    }

    private ShardDb liveDb() throws RocksDBException {
        lastAccessNanos = System.nanoTime();
        synchronized (liveMonitor) {
            if (live == null) {
                try {
                    Files.createDirectories(liveDir);
                } catch (IOException e) {
                    throw new RocksDBException("cannot create " + liveDir + ": " + e);
                }
                // RocksDB writes CURRENT when it creates a database: without it there is no data.
                boolean hadData = Files.exists(liveDir.resolve("CURRENT"));
                live = ShardDb.open(engine.resources(), liveDir);
                engine.shardOpened(this);
                openFilter(hadData);
            }
            return live;
        }
    }

    // ---- Bloom filter

    /** Under liveMonitor and a state lock, before any call can use the new live instance. */
    private void openFilter(boolean hadData) {
        NodeFilters filters = engine.filters();
        filterTrusted = false;
        filterFileValid = false;
        filter = null;
        deleteQuietly(FilterFiles.temporary(filterFile));
        if (Files.exists(filterFile)) {
            // The file covers the live data, so it stays valid until a write even if not loaded.
            filterFileValid = true;
            long bytes;
            try {
                bytes = Files.size(filterFile);
            } catch (IOException e) {
                bytes = 0;
            }
            if (!reserveFilterBytes(bytes)) {
                filterUnavailable(
                        "the node's filter memory (filter.max-memory-bytes "
                                + filters.limitBytes()
                                + ") is used up; the saved filter is loaded once it fits",
                        false);
                return;
            }
            try {
                RebuildingFilter loaded = FilterFiles.read(filterFile, filters.sizing());
                setReservedFilterBytes(loaded.sizeBytes());
                filter = loaded;
                filterTrusted = true;
                filterUnavailableReason = "";
            } catch (IOException | RuntimeException e) {
                releaseFilterBytes();
                LOG.warn(
                        "The saved filter of {} does not read, rebuilding it: {}",
                        this,
                        e.toString());
                deleteQuietly(filterFile);
                filterFileValid = false;
                filterUnavailable("its saved filter did not read (" + e.getMessage() + ")", true);
            }
            return;
        }
        if (!hadData) {
            if (reserveFilterBytes(filters.bytesForLiveKeys(0))) {
                RebuildingFilter empty = RebuildingFilter.createEmpty(filters.sizing());
                setReservedFilterBytes(empty.sizeBytes());
                filter = empty;
                filterTrusted = true;
                filterUnavailableReason = "";
            } else {
                filterUnavailable(
                        "the node's filter memory (filter.max-memory-bytes "
                                + filters.limitBytes()
                                + ") is used up",
                        false);
            }
            return;
        }
        filterUnavailable(
                "the shard has data but no saved filter (written before an unclean stop, or"
                        + " restored from a snapshot without one)",
                true);
    }

    private void filterUnavailable(String reason, boolean urgent) {
        filterUnavailableReason = reason;
        engine.filters().requestRebuild(this, urgent);
    }

    /**
     * Saves the trusted filter unless the saved one is still valid, then frees it. Under the state
     * write lock, after the live instance was flushed and closed.
     */
    private void closeFilter(boolean save) {
        RebuildingFilter f = filter;
        filter = null;
        boolean trusted = filterTrusted;
        filterTrusted = false;
        filterUnavailableReason = "";
        try {
            if (save && f != null && trusted && !filterFileValid) {
                try (FilterCopy copy = transientCopy(f)) {
                    FilterFiles.writeDurably(filterFile, copy.snapshot());
                    filterFileValid = true;
                } catch (IOException | RuntimeException e) {
                    // Without the file the next open rebuilds it: slower, never wrong.
                    LOG.warn("Could not save the filter of {}: {}", this, e.toString());
                }
            }
        } finally {
            if (f != null) {
                f.close();
            }
            releaseFilterBytes();
        }
    }

    /** A copy counted as transient filter memory until closed. */
    private FilterCopy transientCopy(RebuildingFilter f) {
        return new FilterCopy(f.snapshot(), engine.filters());
    }

    private boolean reserveFilterBytes(long bytes) {
        if (!engine.filters().tryReserve(bytes)) {
            return false;
        }
        filterReservedBytes.addAndGet(bytes);
        return true;
    }

    /** Sets this shard's reservation to what its filters hold (they are allocated already). */
    private void setReservedFilterBytes(long bytes) {
        long before = filterReservedBytes.getAndSet(bytes);
        engine.filters().adjust(bytes - before);
    }

    private void releaseFilterBytes() {
        engine.filters().release(filterReservedBytes.getAndSet(0));
    }

    /** Rule 3 of RebuildingFilter: under the writer lock, right after the checkpoint. */
    private void writeFilterInto(Path snapshotStaging) throws IOException {
        RebuildingFilter f = filter;
        if (f == null || !filterTrusted) {
            // A restore of this snapshot rebuilds the filter from its keys.
            return;
        }
        try (FilterCopy copy = transientCopy(f)) {
            FilterFiles.write(snapshotStaging.resolve(FilterFiles.FILE_NAME), copy.snapshot());
        }
    }

    /** After a write, under the writer lock: queues a rebuild once the filter's rule says so. */
    private void requestRebuildIfDue() {
        RebuildingFilter f = filter;
        if (f != null && filterTrusted && rebuildAllowedNow() && f.needsRebuild()) {
            engine.filters().requestRebuild(this, false);
        }
    }

    private boolean rebuildAllowedNow() {
        long notBefore = rebuildNotBeforeNanos;
        return notBefore == 0 || System.nanoTime() - notBefore >= 0;
    }

    /** The version of the filter the shard would serve now, or -1 if it has none. */
    private long servedFilterVersion() {
        RebuildingFilter f = filter;
        return f != null && filterTrusted ? f.version() : -1;
    }

    /** For {@link NodeFilters}: false if the shard is queued already. */
    boolean markRebuildQueued() {
        return rebuildQueued.compareAndSet(false, true);
    }

    /** Under the state write lock, before the instance closes: no page is being read. */
    private void cancelScan() {
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
        final ShardDb.KeyScan keys;
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
                ShardDb.KeyScan keys,
                boolean fromScratch) {
            this.filter = filter;
            this.handle = handle;
            this.keys = keys;
            this.fromScratch = fromScratch;
        }
    }

    /** Keys per scan page: the state read lock is held for one page (a few milliseconds). */
    static final int SCAN_PAGE_KEYS = 4096;

    /** How long a shard waits before the next try after a rebuild failed or found no memory. */
    private static final long REBUILD_RETRY_NANOS = 10_000_000_000L;

    /**
     * Rebuilds the filter from a scan of the shard's keys, on a rebuild thread. Follows rule 2 of
     * {@link RebuildingFilter} (begin, then open the RocksDB snapshot that is scanned), so every
     * key written before the begin is scanned and every later one inserted into the new filter too.
     * Holds the state read lock one page at a time, so writes go on; the writer lock only to
     * install the empty filter a shard without one is rebuilt into. A close of the shard cancels it
     * between pages.
     *
     * @throws InterruptedException if the thread is interrupted (shutdown) while rate-limited
     */
    void rebuildFilter(RebuildRateLimiter limiter) throws InterruptedException {
        try {
            FilterScan s = startScan();
            if (s == null) {
                return;
            }
            while (!s.done) {
                engine.filters().scanHook.beforePage(this, s.keysScanned);
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
        // A request made while this one ran found the shard queued and was dropped: a close and
        // reopen meanwhile (restore, clone) may have left it without a filter.
        if (rebuildUndersized) {
            engine.filters().requestRebuild(this, false);
        } else if (!filterTrusted
                && scan == null
                && !dropped
                && !engine.isClosed()
                && isOpen()
                && rebuildAllowedNow()) {
            engine.filters().requestRebuild(this, true);
        }
    }

    @Nullable
    private FilterScan startScan() {
        state.readLock().lock();
        try {
            if (dropped || shutDown || engine.isClosed() || scan != null || !rebuildAllowedNow()) {
                return null;
            }
            ShardDb db;
            synchronized (liveMonitor) {
                db = live;
            }
            if (db == null) {
                // Closed since it was queued: the next open decides again.
                return null;
            }
            RebuildingFilter current = filter;
            boolean fromScratch = !filterTrusted;
            if (!fromScratch
                    && (current == null || !(rebuildUndersized || current.needsRebuild()))) {
                return null;
            }
            rebuildUndersized = false;
            NodeFilters filters = engine.filters();
            long estimate = Math.max(0, db.estimatedKeys());
            long baseBytes = current == null ? filters.bytesForLiveKeys(0) : 0;
            long nextBytes =
                    filters.bytesForLiveKeys(
                            Math.max(estimate, current == null ? 0 : current.liveKeysAtBuild()));
            if (!reserveFilterBytes(baseBytes + nextBytes)) {
                rebuildNotBeforeNanos = System.nanoTime() + REBUILD_RETRY_NANOS;
                String why =
                        "the node's filter memory (filter.max-memory-bytes "
                                + filters.limitBytes()
                                + ") has no room for a "
                                + nextBytes
                                + "-byte rebuild";
                if (fromScratch) {
                    filterUnavailableReason = why + ", tried again every 10 s";
                } else {
                    LOG.debug("Not rebuilding the filter of {}: {}", this, why);
                }
                return null;
            }
            RebuildingFilter f = current;
            RebuildingFilter.Rebuild handle = null;
            try {
                if (f == null) {
                    RebuildingFilter empty = RebuildingFilter.createEmpty(filters.sizing());
                    writer.lock();
                    try {
                        filter = empty;
                    } finally {
                        writer.unlock();
                    }
                    f = empty;
                }
                handle = f.beginRebuild(estimate);
                setReservedFilterBytes(f.sizeBytes());
                // Opened after beginRebuild: rule 2.
                FilterScan s = new FilterScan(f, handle, db.openKeyScan(), fromScratch);
                scan = s;
                if (fromScratch) {
                    filterUnavailableReason = "its filter is being rebuilt from a key scan";
                }
                return s;
            } catch (RuntimeException e) {
                abandonRebuild(f, handle, fromScratch, e);
                return null;
            }
        } catch (RocksDBException e) {
            LOG.warn("Cannot start the filter rebuild of {}: {}", this, e.getMessage());
            rebuildNotBeforeNanos = System.nanoTime() + REBUILD_RETRY_NANOS;
            return null;
        } finally {
            state.readLock().unlock();
        }
    }

    /** Scans one page; the bytes read, or -1 if the rebuild is over (cancelled or failed). */
    private long scanPage(FilterScan s) {
        state.readLock().lock();
        try {
            if (s.cancelled) {
                return -1;
            }
            ShardDb.KeyPage page = s.keys.next(s.hashes);
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
            state.readLock().unlock();
        }
    }

    private void finishScan(FilterScan s) {
        state.readLock().lock();
        try {
            if (s.cancelled) {
                return;
            }
            scan = null;
            s.keys.close();
            long version = s.handle.finish();
            setReservedFilterBytes(s.filter.sizeBytes());
            FilterGeometry built = s.filter.geometry();
            rebuildUndersized =
                    s.keysScanned > engine.filters().sizing().capacity(built)
                            && built.numBlocks() < engine.filters().sizing().maxBlocks();
            if (s.fromScratch) {
                filterTrusted = true;
                filterUnavailableReason = "";
            }
            rebuildNotBeforeNanos = 0;
            LOG.info(
                    "Rebuilt the filter of {}{}: version {}, {} keys, {} bytes read in {} ms, {}",
                    this,
                    s.fromScratch ? " (it had none it could serve)" : "",
                    version,
                    s.keysScanned,
                    s.bytesRead,
                    (System.nanoTime() - s.startedNanos) / 1_000_000,
                    s.filter.geometry());
        } finally {
            state.readLock().unlock();
        }
    }

    /**
     * A rebuild that failed: the shard keeps the filter it had (a refresh) or goes back to none
     * (from scratch), and the next try waits. Under the state read lock.
     */
    private void abandonRebuild(
            RebuildingFilter f,
            @Nullable RebuildingFilter.Rebuild handle,
            boolean fromScratch,
            Exception e) {
        LOG.warn("The filter rebuild of {} failed: {}", this, e.toString());
        rebuildNotBeforeNanos = System.nanoTime() + REBUILD_RETRY_NANOS;
        if (fromScratch) {
            if (f != null) {
                writer.lock();
                try {
                    if (filter == f) {
                        filter = null;
                    }
                    f.close();
                } finally {
                    writer.unlock();
                }
            }
            filterUnavailableReason =
                    "its rebuild failed (" + e.getMessage() + "), tried again in 10 s";
            releaseFilterBytes();
        } else {
            if (handle != null) {
                handle.abort();
            }
            if (f != null) {
                setReservedFilterBytes(f.sizeBytes());
            } else {
                releaseFilterBytes();
            }
        }
    }

    /**
     * A copy of the shard's filter for a client under {@code callerEpoch}, opening the shard if
     * needed; the caller closes it.
     *
     * @throws KvServerException FENCED for a stale epoch, FILTER_UNAVAILABLE while the shard has no
     *     filter it can vouch for
     */
    public FilterCopy copyFilter(long callerEpoch) {
        state.readLock().lock();
        try {
            checkUsable();
            checkEpoch(callerEpoch);
            liveDb();
            RebuildingFilter f = filter;
            if (f == null || !filterTrusted) {
                if (scan == null) {
                    engine.filters().requestRebuild(this, true);
                }
                throw new KvServerException(
                        ErrorCode.FILTER_UNAVAILABLE,
                        this
                                + " (epoch "
                                + callerEpoch
                                + "): no filter to serve: "
                                + filterUnavailableReason
                                + "; fetch it again later");
            }
            return transientCopy(f);
        } catch (RocksDBException e) {
            throw KvServerException.storage("filter fetch of " + this, e);
        } finally {
            state.readLock().unlock();
        }
    }

    /**
     * After OpenShard, Restore, Clone: a shard with data but no saved filter is opened now, so that
     * its rebuild starts before the first read needs it. A shard with a saved filter (or no data)
     * stays closed: it loads (or creates) its filter when first used, which costs no scan.
     */
    public void prepareFilter() {
        state.readLock().lock();
        try {
            checkUsable();
            if (isOpen()) {
                if (!filterTrusted && scan == null) {
                    engine.filters().requestRebuild(this, true);
                }
            } else if (!Files.exists(filterFile) && Files.exists(liveDir.resolve("CURRENT"))) {
                liveDb();
            }
        } catch (RocksDBException | RuntimeException e) {
            LOG.warn("Could not prepare the filter of {}: {}", this, e.toString());
        } finally {
            state.readLock().unlock();
        }
    }

    /** Periodically: re-queues a rebuild that was refused (no memory, a failure) or dropped. */
    void maintainFilter() {
        if (!state.readLock().tryLock()) {
            return;
        }
        try {
            if (!isOpen() || scan != null || !rebuildAllowedNow()) {
                return;
            }
            RebuildingFilter f = filter;
            if (!filterTrusted) {
                engine.filters().requestRebuild(this, true);
            } else if (f != null && (rebuildUndersized || f.needsRebuild())) {
                engine.filters().requestRebuild(this, false);
            }
        } finally {
            state.readLock().unlock();
        }
    }

    /** The filter's state for the admin CLI; never opens the shard. */
    public FilterStatus filterStatus() {
        state.readLock().lock();
        try {
            long saved = sizeOrZero(filterFile);
            boolean queued = rebuildQueued.get();
            if (!isOpen()) {
                FilterStatus.State closedState =
                        Files.exists(filterFile)
                                ? FilterStatus.State.SAVED
                                : Files.exists(liveDir.resolve("CURRENT"))
                                        ? FilterStatus.State.MISSING
                                        : FilterStatus.State.EMPTY;
                return new FilterStatus(closedState, 0, 0, saved, 0, false, false, 0, 0, "");
            }
            RebuildingFilter f = filter;
            FilterScan s = scan;
            long memory = filterReservedBytes.get();
            long scanned = s == null ? 0 : s.keysScanned;
            if (f != null && filterTrusted) {
                return new FilterStatus(
                        FilterStatus.State.AVAILABLE,
                        f.version(),
                        memory,
                        saved,
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
                    saved,
                    0,
                    s != null,
                    queued,
                    scanned,
                    0,
                    filterUnavailableReason);
        } finally {
            state.readLock().unlock();
        }
    }

    private static long sizeOrZero(Path file) {
        try {
            return Files.exists(file) ? Files.size(file) : 0;
        } catch (IOException e) {
            return 0;
        }
    }

    private void checkUsable() {
        if (dropped) {
            throw KvServerException.tableNotFound(table);
        }
        if (shutDown || engine.isClosed()) {
            throw KvServerException.shuttingDown();
        }
    }

    private void checkEpoch(long callerEpoch) {
        long current = epoch;
        long floor = engine.leaseFloor();
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

    private long bumpEpoch() {
        try {
            long next = engine.nextEpoch(epoch);
            Files.createDirectories(dir);
            DurableFiles.writeAtomically(
                    epochFile, Long.toString(next).getBytes(StandardCharsets.US_ASCII));
            epoch = next;
            lastActivityMillis = System.currentTimeMillis();
            return next;
        } catch (IOException e) {
            throw KvServerException.storage("cannot persist a new epoch of " + this, e);
        }
    }

    private Path snapshotDir(long snapshotId) {
        return snapshotsDir.resolve(Long.toString(snapshotId));
    }

    /** Loads epoch and snapshots and finishes or undoes what a crash interrupted. */
    private void recover() throws IOException {
        if (Files.exists(epochFile)) {
            String text = Files.readString(epochFile, StandardCharsets.US_ASCII).trim();
            try {
                epoch = Long.parseLong(text);
            } catch (NumberFormatException e) {
                throw new IOException("corrupt epoch file " + epochFile + ": '" + text + "'");
            }
        }
        if (Files.exists(stagedLiveDir)) {
            if (Files.exists(liveDir)) {
                // A restore died before the swap; it was never acknowledged.
                DurableFiles.deleteTree(stagedLiveDir);
            } else {
                // A restore died between removing the old live data and renaming the new one.
                DurableFiles.moveAtomically(stagedLiveDir, liveDir);
            }
        }
        if (!Files.isDirectory(snapshotsDir)) {
            return;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(snapshotsDir)) {
            for (Path p : ds) {
                String name = p.getFileName().toString();
                if (name.startsWith(".tmp-")) {
                    DurableFiles.deleteTree(p);
                    continue;
                }
                long id;
                try {
                    id = Long.parseLong(name);
                } catch (NumberFormatException e) {
                    LOG.warn("Ignoring unexpected entry {} in {}", name, snapshotsDir);
                    continue;
                }
                snapshots.put(id, SnapshotMeta.read(p));
            }
        }
    }

    private static void deleteQuietly(Path path) {
        try {
            DurableFiles.deleteTree(path);
        } catch (IOException e) {
            LOG.warn("Could not delete {}: {}", path, e.getMessage());
        }
    }

    @Override
    public String toString() {
        return "table '" + table + "' shard " + shard;
    }
}
