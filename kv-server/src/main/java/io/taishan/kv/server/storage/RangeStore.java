package io.taishan.kv.server.storage;

import io.taishan.kv.server.durable.FileOrigins;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.locks.ReentrantLock;
import javax.annotation.Nullable;
import org.rocksdb.RocksDBException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One RocksDB instance of a table on this node, holding the key ranges of its member shards (see
 * {@link RangeDb} for the key layout). A table has one store per writer (the backend of one Flink
 * subtask names itself when it opens or restores its shards), so that a checkpoint's markers, which
 * a writer sends for all its shards at one point of its write order, cut the whole store at once:
 * one flush and one hard-link checkpoint ({@link StoreCut}) per store and checkpoint, whatever the
 * number of key groups. A restore forks a new store from a cut (hard links, no data copied) and
 * moves the restored shards into it; the rest of the old store is untouched.
 *
 * <p>A shard's range in a store means something only while the shard is a member. A fork holds
 * every shard of its cut, but only the restored ones become members; a shard leaving a store leaves
 * its range behind. Such ranges are garbage, removed in the background by range tombstones ({@link
 * #deleteGarbage}); a shard that joins a store empty has its range cleared durably first, so
 * garbage can never show through, whether or not its removal was durable.
 *
 * <p>Lineage: a random UUID given to a store when it is made, empty or forked, and never to another
 * ({@link #lineage}). RocksDB names a store's files by a counter of its own, and a fork continues
 * its cut's counter while the store it came from goes on with other bytes under the same names: so
 * "the same file" is (lineage, name), not (store id, name), store ids being reused within a table
 * once their store is gone. What an upload may reuse is keyed by it ({@code durable.FileIdentity}).
 *
 * <p>Locking: {@link #writerLock} orders writes, cuts and garbage removal (a cut must see every
 * write before its markers and none after); the instance is opened lazily under any lock of the
 * table (and a monitor of its own, taken after the writer lock, never before it) and closed only
 * under the table's write lock, so a holder of the table's read lock that sees it open may use it.
 * Membership changes under the table's write lock.
 */
final class RangeStore {
    private static final Logger LOG = LoggerFactory.getLogger(RangeStore.class);

    /** The store's record beside its live directory. */
    static final String META_FILE = "TAISHAN-STORE";

    private final TableStore table;
    private final int id;
    private final String writer;
    private final String lineage;
    private final long createdAtMillis;
    private final Path dir;
    private final Path liveDir;
    private final ReentrantLock writerLock = new ReentrantLock();
    private final Object liveMonitor = new Object();

    /** Written under the table's write lock. */
    private final BitSet members = new BitSet();

    @Nullable private volatile RangeDb db;

    /**
     * Whether {@code live/TAISHAN-FILTERS} exists and covers the live data: set when it is written
     * (under the writer lock) or found at open (before the instance is visible), cleared with the
     * file before the first put or merge after (under the writer lock).
     */
    private volatile boolean filtersFileValid;

    private volatile long lastAccessNanos = System.nanoTime();

    private RangeStore(
            TableStore table,
            int id,
            String writer,
            String lineage,
            long createdAtMillis,
            Path dir) {
        this.table = table;
        this.id = id;
        this.writer = writer;
        this.lineage = lineage;
        this.createdAtMillis = createdAtMillis;
        this.dir = dir;
        this.liveDir = dir.resolve("live");
    }

    /** A new, empty store; its RocksDB instance is created when first used. */
    static RangeStore create(TableStore table, int id, String writer, Path dir, Path tmpDir)
            throws IOException {
        Path staging = Files.createTempDirectory(tmpDir, "store-");
        long now = System.currentTimeMillis();
        String lineage = newLineage();
        DurableFiles.writeAtomically(
                staging.resolve(META_FILE), meta(id, writer, lineage, now, -1));
        DurableFiles.moveAtomically(staging, dir);
        return new RangeStore(table, id, writer, lineage, now, dir);
    }

    /**
     * A store forked from a cut: its live directory holds hard links to the cut's files (RocksDB's
     * small mutable files are copied, so the cut never changes under it). Where the cut's files
     * have copies in checkpoint storage, the fork's first record of them is the cut's, re-keyed to
     * the fork's lineage: its first checkpoint holds those same files. Fails before anything is
     * visible under {@code dir}.
     */
    static RangeStore fork(
            TableStore table, int id, String writer, Path dir, Path tmpDir, Path cutDir, long cutId)
            throws IOException {
        Path staging = Files.createTempDirectory(tmpDir, "fork-");
        try {
            Path live = Files.createDirectories(staging.resolve("live"));
            DurableFiles.linkFiles(
                    cutDir, live, false, n -> n.startsWith("TAISHAN-") || n.endsWith(".tmp"));
            long now = System.currentTimeMillis();
            String lineage = newLineage();
            inheritOrigins(cutDir, staging, lineage);
            DurableFiles.writeAtomically(
                    staging.resolve(META_FILE), meta(id, writer, lineage, now, cutId));
            DurableFiles.fsync(staging);
            DurableFiles.moveAtomically(staging, dir);
            return new RangeStore(table, id, writer, lineage, now, dir);
        } catch (IOException | RuntimeException e) {
            DurableFiles.deleteTree(staging);
            throw e;
        }
    }

    /**
     * A store from its record. One written before lineages existed gets one now (recorded before it
     * is used), so its files' copies are told apart from those of every other store from here on.
     */
    static RangeStore load(TableStore table, Path dir) throws IOException {
        Properties p = new Properties();
        p.load(new StringReader(Files.readString(dir.resolve(META_FILE))));
        try {
            int id = Integer.parseInt(p.getProperty("id"));
            String writer = p.getProperty("writer", "");
            long created = Long.parseLong(p.getProperty("created.at.millis"));
            String lineage = p.getProperty("lineage");
            if (lineage == null) {
                lineage = newLineage();
                long forkedFrom = Long.parseLong(p.getProperty("forked.from.cut", "-1"));
                DurableFiles.writeAtomically(
                        dir.resolve(META_FILE), meta(id, writer, lineage, created, forkedFrom));
            }
            return new RangeStore(table, id, writer, lineage, created, dir);
        } catch (RuntimeException e) {
            throw new IOException("corrupt store record in " + dir + ": " + e, e);
        }
    }

    private static String newLineage() {
        return UUID.randomUUID().toString();
    }

    /**
     * Writes the cut's record of copies, re-keyed to the fork, beside the fork's live directory.
     * Without it the fork's first upload copies every file again: slower, never wrong, so a record
     * that does not read is skipped.
     */
    private static void inheritOrigins(Path cutDir, Path forkDir, String forkLineage) {
        try {
            Optional<FileOrigins> origins = FileOrigins.readFrom(cutDir);
            if (origins.isPresent()) {
                origins.get().forStore(forkLineage).writeTo(forkDir);
            }
        } catch (IOException e) {
            LOG.warn("The copies recorded in {} do not read, not reused: {}", cutDir, e.toString());
        }
    }

    private static byte[] meta(
            int id, String writer, String lineage, long createdAtMillis, long forkedFromCut) {
        Properties p = new Properties();
        p.setProperty("id", Integer.toString(id));
        p.setProperty("writer", writer);
        p.setProperty("lineage", lineage);
        p.setProperty("created.at.millis", Long.toString(createdAtMillis));
        if (forkedFromCut >= 0) {
            p.setProperty("forked.from.cut", Long.toString(forkedFromCut));
        }
        StringWriter w = new StringWriter();
        try {
            p.store(w, "Taishan store");
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return w.toString().getBytes(StandardCharsets.UTF_8);
    }

    int id() {
        return id;
    }

    TableStore table() {
        return table;
    }

    String writer() {
        return writer;
    }

    /** The lineage of the store's files, unique on the node for ever (see the class doc). */
    String lineage() {
        return lineage;
    }

    Path dir() {
        return dir;
    }

    Path liveDir() {
        return liveDir;
    }

    ReentrantLock writerLock() {
        return writerLock;
    }

    /** The members; read under a table lock, changed under its write lock. */
    BitSet members() {
        return members;
    }

    long lastAccessNanos() {
        return lastAccessNanos;
    }

    void touch() {
        lastAccessNanos = System.nanoTime();
    }

    // ---- the RocksDB instance

    @Nullable
    RangeDb dbIfOpen() {
        return db;
    }

    boolean isOpen() {
        return db != null;
    }

    /**
     * The instance, opened if needed; under a table lock. Opening loads the members' filters from
     * the saved bundle, or gives each an empty one or a rebuild ({@link ShardFilter#opened}).
     */
    RangeDb db() throws RocksDBException {
        lastAccessNanos = System.nanoTime();
        RangeDb open = db;
        if (open != null) {
            return open;
        }
        synchronized (liveMonitor) {
            if (db != null) {
                return db;
            }
            try {
                Files.createDirectories(liveDir);
            } catch (IOException e) {
                throw new RocksDBException("cannot create " + liveDir + ": " + e);
            }
            RangeDb opened = RangeDb.open(table.engine().resources(), liveDir);
            Path bundle = liveDir.resolve(FilterBundle.LIVE_FILE_NAME);
            FilterBundle.Reader saved = null;
            if (Files.exists(bundle)) {
                try {
                    saved = FilterBundle.open(bundle);
                } catch (IOException | RuntimeException e) {
                    LOG.warn(
                            "The saved filters of {} do not read, rebuilding: {}",
                            this,
                            e.toString());
                    deleteQuietly(bundle);
                }
            }
            filtersFileValid = saved != null;
            try {
                BitSet unsaved = (BitSet) members.clone();
                if (saved != null) {
                    for (int s = members.nextSetBit(0); s >= 0; s = members.nextSetBit(s + 1)) {
                        if (saved.contains(s)) {
                            unsaved.clear(s);
                        }
                    }
                }
                BitSet withKeys = opened.shardsWithKeys(unsaved);
                for (int s = members.nextSetBit(0); s >= 0; s = members.nextSetBit(s + 1)) {
                    table.shard(s).filter().opened(opened, saved, withKeys);
                }
            } finally {
                closeQuietly(saved);
            }
            db = opened;
            table.engine().storeOpened(this);
            return opened;
        }
    }

    /**
     * Flushes (with {@code flush}: idle, LRU, shutdown; the members' filters are then saved beside
     * the data) and closes the instance, freeing the members' filters. Under the table's write
     * lock; false if it was not open.
     */
    boolean close(boolean flush) throws RocksDBException {
        RangeDb open;
        synchronized (liveMonitor) {
            open = db;
            db = null;
        }
        if (open == null) {
            return false;
        }
        table.engine().storeClosed(this);
        // A rebuild's scan holds a RocksDB snapshot and iterator of the instance: gone first.
        for (int s = members.nextSetBit(0); s >= 0; s = members.nextSetBit(s + 1)) {
            table.shard(s).filter().cancelScan();
        }
        boolean closed = false;
        try {
            open.close(flush);
            closed = true;
        } finally {
            if (flush && closed) {
                saveFilters();
            }
            for (int s = members.nextSetBit(0); s >= 0; s = members.nextSetBit(s + 1)) {
                table.shard(s).filter().closeFilter();
            }
        }
        return true;
    }

    /** After the data is flushed: every member's trusted filter into one bundle, unless valid. */
    private void saveFilters() {
        writerLock.lock();
        try {
            if (filtersFileValid) {
                return;
            }
            Path bundle = liveDir.resolve(FilterBundle.LIVE_FILE_NAME);
            Path tmp = liveDir.resolve(FilterBundle.LIVE_FILE_NAME + ".tmp");
            try {
                Files.deleteIfExists(tmp);
                FilterBundle.write(tmp, trustedMembers(), s -> table.shard(s).filter().copy());
                DurableFiles.moveAtomically(tmp, bundle);
                filtersFileValid = true;
            } catch (IOException | RuntimeException e) {
                // Without the file the next open rebuilds the filters: slower, never wrong.
                LOG.warn("Could not save the filters of {}: {}", this, e.toString());
                deleteQuietly(tmp);
            }
        } finally {
            writerLock.unlock();
        }
    }

    private int[] trustedMembers() {
        List<Integer> trusted = new ArrayList<>();
        for (int s = members.nextSetBit(0); s >= 0; s = members.nextSetBit(s + 1)) {
            if (table.shard(s).filter().isTrusted()) {
                trusted.add(s);
            }
        }
        return trusted.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * The saved filters no longer cover the live data once a key is added, so the file goes
     * (durably) before the write: whatever stop comes next, a file that exists is right. Under the
     * writer lock.
     */
    void beforeKeysAdded() {
        if (!filtersFileValid) {
            return;
        }
        Path bundle = liveDir.resolve(FilterBundle.LIVE_FILE_NAME);
        try {
            Files.deleteIfExists(bundle);
            DurableFiles.fsync(liveDir);
            filtersFileValid = false;
        } catch (IOException e) {
            throw KvServerException.storage(
                    "cannot remove the saved filters " + bundle + " of " + this, e);
        }
    }

    /** Whether the saved filter bundle holds {@code shard}'s filter (reads its index). */
    boolean hasSavedFilter(int shard) {
        Path bundle = liveDir.resolve(FilterBundle.LIVE_FILE_NAME);
        try {
            if (!Files.exists(bundle)) {
                return false;
            }
            try (FilterBundle.Reader saved = FilterBundle.open(bundle)) {
                return saved.contains(shard);
            }
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** Whether the instance was ever created on disk (RocksDB writes CURRENT then). */
    boolean hasData() {
        return Files.exists(liveDir.resolve("CURRENT"));
    }

    /** Bytes of the saved filter bundle, 0 without one. */
    long savedFilterBytes() {
        try {
            Path bundle = liveDir.resolve(FilterBundle.LIVE_FILE_NAME);
            return Files.exists(bundle) ? Files.size(bundle) : 0;
        } catch (IOException e) {
            return 0;
        }
    }

    // ---- cuts

    /**
     * Cuts the store: a flush and a hard-link checkpoint into {@code cuts/<cutId>}, with the
     * filters of the members whose filter is not in an earlier cut still. Under the writer lock,
     * with the table's read lock held. The cut is registered with one transient reference for the
     * caller.
     */
    StoreCut cut(long cutId, SnapshotCatalog catalog) {
        Path staging = catalog.cutsDir().resolve(".tmp-" + cutId);
        List<Long> retained = new ArrayList<>();
        try {
            RangeDb open = db();
            open.checkpoint(staging);
            StoreCut.FilterRunsBuilder holders = new StoreCut.FilterRunsBuilder();
            List<Integer> own = new ArrayList<>();
            for (int s = members.nextSetBit(0); s >= 0; s = members.nextSetBit(s + 1)) {
                ShardFilter f = table.shard(s).filter();
                if (!f.isTrusted()) {
                    continue;
                }
                long saved = f.savedInCut();
                if (saved >= 0 && catalog.retain(saved)) {
                    retained.add(saved);
                    holders.add(s, saved);
                } else {
                    own.add(s);
                    holders.add(s, cutId);
                }
            }
            int[] ownShards = own.stream().mapToInt(Integer::intValue).toArray();
            if (ownShards.length > 0) {
                FilterBundle.write(
                        staging.resolve(FilterBundle.CUT_FILE_NAME),
                        ownShards,
                        s -> table.shard(s).filter().copy());
            }
            long size = 0;
            List<Path> files = DurableFiles.listFiles(staging);
            for (Path f : files) {
                size += Files.size(f);
            }
            StoreCut cut =
                    new StoreCut(
                            cutId,
                            id,
                            System.currentTimeMillis(),
                            size,
                            files.size(),
                            holders.build(),
                            lineage);
            DurableFiles.writeAtomically(staging.resolve(StoreCut.FILE_NAME), cut.toBytes());
            DurableFiles.fsyncFilesAndDir(staging);
            DurableFiles.moveAtomically(staging, catalog.cutDir(cutId));
            catalog.addCut(cut);
            for (int s : ownShards) {
                table.shard(s).filter().savedInCut(cutId);
            }
            return cut;
        } catch (IOException | RocksDBException e) {
            deleteQuietly(staging);
            throw KvServerException.storage("cut " + cutId + " of " + this + " failed", e);
        } finally {
            for (long holder : retained) {
                catalog.release(holder);
            }
        }
    }

    // ---- garbage

    /**
     * Removes the ranges of every shard that is not a member (left behind by shards that moved, or
     * brought by a fork) with one range tombstone per gap between members. Not durable, and need
     * not be: a shard joining a store clears its range first. Under the table's read lock.
     */
    void deleteGarbage(int shardCount) throws RocksDBException {
        RangeDb open = db;
        if (open == null) {
            return;
        }
        writerLock.lock();
        try {
            int from = 0;
            while (from < shardCount) {
                int member = members.nextSetBit(from);
                int to = member < 0 || member >= shardCount ? shardCount : member;
                open.deleteShards(from, to);
                if (member < 0) {
                    break;
                }
                from = members.nextClearBit(member);
            }
        } finally {
            writerLock.unlock();
        }
    }

    long diskBytes() {
        return DurableFiles.sizeOf(dir);
    }

    long createdAtMillis() {
        return createdAtMillis;
    }

    private static void deleteQuietly(Path path) {
        try {
            DurableFiles.deleteTree(path);
        } catch (IOException e) {
            LOG.warn("Could not delete {}: {}", path, e.getMessage());
        }
    }

    private static void closeQuietly(@Nullable FilterBundle.Reader reader) {
        if (reader != null) {
            try {
                reader.close();
            } catch (IOException e) {
                LOG.warn("Could not close {}: {}", reader.file(), e.getMessage());
            }
        }
    }

    @Override
    public String toString() {
        return "table '" + table.name() + "' store " + id;
    }
}
