package io.taishan.kv.server.storage;

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
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
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

    private final ReentrantReadWriteLock state = new ReentrantReadWriteLock();
    private final ReentrantLock writer = new ReentrantLock();
    private final ReentrantReadWriteLock snapshotsLock = new ReentrantReadWriteLock();
    private final Object liveMonitor = new Object();

    /** Guarded by state: written under its write lock. */
    private volatile long epoch;

    /** Guarded by liveMonitor. */
    @Nullable private ShardDb live;

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

    ShardStore(StorageEngine engine, String table, int shard, Path dir) throws IOException {
        this.engine = engine;
        this.table = table;
        this.shard = shard;
        this.dir = dir;
        this.liveDir = dir.resolve("live");
        this.stagedLiveDir = dir.resolve("live.new");
        this.snapshotsDir = dir.resolve("snapshots");
        this.epochFile = dir.resolve("epoch");
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
            writer.lock();
            try {
                return applyLocked(ops);
            } finally {
                writer.unlock();
            }
        }

        public SnapshotMeta snapshot(long snapshotId, boolean pinned) {
            writer.lock();
            try {
                return snapshotLocked(snapshotId, pinned);
            } finally {
                writer.unlock();
            }
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                state.readLock().unlock();
            }
        }
    }

    private List<SnapshotMeta> applyLocked(List<WriteOp> ops) {
        List<SnapshotMeta> taken = new ArrayList<>(0);
        WriteBatch batch = new WriteBatch();
        try {
            for (WriteOp op : ops) {
                switch (op.getOpCase()) {
                    case PUT ->
                            batch.put(
                                    op.getPut().getKey().toByteArray(),
                                    op.getPut().getValue().toByteArray());
                    case DELETE -> batch.delete(op.getDelete().getKey().toByteArray());
                    case DELETE_RANGE -> {
                        byte[] begin = op.getDeleteRange().getBeginKey().toByteArray();
                        byte[] end = op.getDeleteRange().getEndKey().toByteArray();
                        if (Arrays.compareUnsigned(begin, end) < 0) {
                            batch.deleteRange(begin, end);
                        }
                    }
                    case APPEND ->
                            batch.merge(
                                    op.getAppend().getKey().toByteArray(),
                                    op.getAppend().getValue().toByteArray());
                    case SNAPSHOT -> {
                        commit(batch);
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
            commit(batch);
            return taken;
        } catch (RocksDBException e) {
            throw KvServerException.storage("write to " + this, e);
        } finally {
            batch.close();
        }
    }

    private void commit(WriteBatch batch) throws RocksDBException {
        if (batch.count() == 0) {
            return;
        }
        unchangedSince = null;
        liveDb().write(batch);
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

    public long diskBytes() {
        return DurableFiles.sizeOf(dir);
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
            if (lastAccessNanos - idleSinceNanos > 0) {
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
        db.close(flush);
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
                live = ShardDb.open(engine.resources(), liveDir);
                engine.shardOpened(this);
            }
            return live;
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
