package io.taishan.kv.server.storage;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.WriteOp;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.LongFunction;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One table on this node: its shards' leases and which store holds each ({@code leases}), its
 * {@link RangeStore}s, its {@link SnapshotCatalog} and its TTL'd states. The entry point of every
 * change of ownership: {@link #openShards} (a lease, the shard kept or started empty) and {@link
 * #restoreShards} (a lease on a snapshot of this or another table), and of multi-shard writes
 * ({@link #write}, the rule in {@link TableWrite}).
 *
 * <p><b>Layout.</b>
 *
 * <pre>
 * tables/&lt;table&gt;/table.properties
 * tables/&lt;table&gt;/leases                   epoch and store of every touched shard
 * tables/&lt;table&gt;/stores/&lt;id&gt;/live/          one RocksDB instance (+ TAISHAN-FILTERS)
 * tables/&lt;table&gt;/cuts/&lt;id&gt;/                hard-link checkpoints of stores (+ filters)
 * tables/&lt;table&gt;/snapshots/&lt;id&gt;             which cut holds each shard's snapshot
 * tables/&lt;table&gt;/ttl-states
 * </pre>
 *
 * <p><b>Restore without moving data.</b> A restore forks a new store from each cut it restores from
 * (hard links), moves the restored shards into it with new leases, and leaves every other shard
 * where it is: a region failover that restores some subtasks never touches the shards of those
 * still running, and a full failover, where every subtask restores, leaves the old stores empty, so
 * they are deleted. Open, restore and clone cost one fork per (cut, call), one lease record write
 * and one epoch, never one operation per key group.
 *
 * <p><b>Locking.</b> {@link #lock}: read-held by every data call from its epoch check to its end;
 * write-held, briefly, by whatever changes leases or membership, or closes or drops a store (the
 * forks of a restore are made before it is taken). Under it, in order: a store's writer lock, then
 * the catalog's lock.
 */
public final class TableStore {
    private static final Logger LOG = LoggerFactory.getLogger(TableStore.class);
    private static final int LEASES_MAGIC = 0x54534c53; // "TSLS"
    private static final int LEASES_VERSION = 1;

    private final StorageEngine engine;
    private final TableMeta meta;
    private final Path dir;
    private final Path storesDir;
    private final Path leasesFile;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final TableTtl ttl;
    private final SnapshotCatalog catalog;
    private final AtomicReferenceArray<Shard> shards;

    /** Read under a table lock, changed under the write lock; iterated by maintenance. */
    private final ConcurrentHashMap<Integer, RangeStore> stores = new ConcurrentHashMap<>();

    @GuardedBy("lock")
    private final Map<String, Integer> storeOfWriter = new HashMap<>();

    private final AtomicInteger nextStoreId = new AtomicInteger(1);

    private volatile boolean dropped;
    private volatile boolean shutDown;

    TableStore(StorageEngine engine, TableMeta meta, Path dir) throws IOException {
        this.engine = engine;
        this.meta = meta;
        this.dir = dir;
        this.storesDir = Files.createDirectories(dir.resolve("stores"));
        this.leasesFile = dir.resolve("leases");
        this.ttl = new TableTtl(dir);
        this.shards = new AtomicReferenceArray<>(meta.shardCount());
        this.catalog = new SnapshotCatalog(meta.name(), dir, engine.trashDir());
        recover();
    }

    StorageEngine engine() {
        return engine;
    }

    ReentrantReadWriteLock lock() {
        return lock;
    }

    SnapshotCatalog catalog() {
        return catalog;
    }

    public TableMeta meta() {
        return meta;
    }

    public String name() {
        return meta.name();
    }

    public int shardCount() {
        return meta.shardCount();
    }

    Path dir() {
        return dir;
    }

    boolean isDropped() {
        return dropped;
    }

    boolean isShutDown() {
        return shutDown;
    }

    /** Fails with SHARD_OUT_OF_RANGE unless {@code shard} is in {@code [0, shardCount)}. */
    public void checkShard(int shard) {
        if (shard < 0 || shard >= meta.shardCount()) {
            throw new KvServerException(
                    ErrorCode.SHARD_OUT_OF_RANGE,
                    "shard "
                            + shard
                            + " out of range for table '"
                            + meta.name()
                            + "' with "
                            + meta.shardCount()
                            + " shards");
        }
    }

    /** The shard's state, made on first use. */
    public Shard shard(int shard) {
        checkShard(shard);
        Shard s = shards.get(shard);
        if (s != null) {
            return s;
        }
        Shard created = new Shard(this, shard);
        return shards.compareAndSet(shard, null, created) ? created : shards.get(shard);
    }

    /** The shards that were ever leased or hold data on this node, ascending. */
    public List<Integer> existingShards() {
        List<Integer> result = new ArrayList<>();
        for (int i = 0; i < shards.length(); i++) {
            Shard s = shards.get(i);
            if (s != null && (s.epoch() > 0 || s.store() != null)) {
                result.add(i);
            }
        }
        return result;
    }

    Collection<RangeStore> stores() {
        return stores.values();
    }

    /** The store of this lineage ({@link RangeStore#lineage}), if it is still there. */
    @Nullable
    RangeStore storeOfLineage(String lineage) {
        for (RangeStore store : stores.values()) {
            if (store.lineage().equals(lineage)) {
                return store;
            }
        }
        return null;
    }

    // ---- leases

    /**
     * Leases {@code ids} to {@code writer}: one new epoch for all, persisted before it is returned.
     * A shard without data, or every one with {@code wipe} (a new attempt that restores nothing
     * into them), is cleared and placed in the writer's store, and with {@code wipe} its unpinned
     * snapshots are dropped (they belong to an earlier run); a shard with data otherwise keeps it
     * where it is.
     *
     * @return each shard's new epoch, in the order of {@code ids}
     */
    public long[] openShards(String writer, int[] ids, boolean wipe) {
        Objects.requireNonNull(writer, "writer");
        BitSet requested = checkShards(ids);
        List<RangeStore> emptied = new ArrayList<>();
        List<RangeStore> departedFrom = new ArrayList<>();
        long epoch;
        lock.writeLock().lock();
        try {
            checkUsableLocked();
            boolean[] created = new boolean[1];
            RangeStore target = writerStore(writer, created);
            List<Integer> joining = new ArrayList<>();
            for (int id : ids) {
                Shard s = shard(id);
                if (s.store() == null || wipe) {
                    joining.add(id);
                }
            }
            if (!joining.isEmpty() && !created[0]) {
                clearRanges(target, joining);
            }
            epoch = engine.nextEpoch(maxEpoch(ids));
            Map<Integer, long[]> changes = new HashMap<>();
            BitSet joined = new BitSet();
            for (int id : joining) {
                joined.set(id);
            }
            for (int id : ids) {
                Shard s = shard(id);
                int storeId = joined.get(id) ? target.id() : s.store().id();
                changes.put(id, new long[] {epoch, storeId});
            }
            persistLeases(changes);
            for (int id : ids) {
                Shard s = shard(id);
                if (!joined.get(id)) {
                    s.assign(epoch, s.store(), s.cleanCut());
                    continue;
                }
                RangeStore old = s.store();
                if (old != null && old != target) {
                    old.members().clear(id);
                    departedFrom.add(old);
                }
                target.members().set(id);
                s.assign(epoch, target, -1);
                if (target.isOpen()) {
                    s.filter().resetEmpty();
                } else {
                    s.filter().closeFilter();
                }
            }
            if (wipe) {
                catalog.dropAbove(requested, Long.MIN_VALUE);
            }
            collectEmptied(departedFrom, emptied);
        } catch (IOException | RocksDBException e) {
            throw KvServerException.storage("cannot open shards of table '" + name() + "'", e);
        } finally {
            lock.writeLock().unlock();
        }
        afterMembershipChange(emptied, departedFrom);
        long[] epochs = new long[ids.length];
        java.util.Arrays.fill(epochs, epoch);
        return epochs;
    }

    /** A shard to restore: {@code shard} takes {@code source}'s snapshot {@code snapshotId}. */
    public record Restore(int shard, TableStore source, long snapshotId) {}

    /**
     * Leases every named shard to {@code writer} with the content of a snapshot, of this table
     * (failover, rescale: a rollback) or of another with the same shard count (a new job from a
     * retained checkpoint or savepoint: a clone, while the source keeps serving). Checks that every
     * snapshot exists before changing anything; then forks one store per cut named (hard links),
     * and moves the shards into them under one new epoch, persisted before it is returned.
     *
     * @param dropLostFutures drop the unpinned snapshots of a rolled-back shard above the one
     *     restored, and all of a cloned shard's: they belong to a lost future of this table, and a
     *     job restored from them (a resubmission under the same job id, whose checkpoint ids start
     *     again above the restored one) must never reach them
     * @throws KvServerException SNAPSHOT_NOT_FOUND naming every missing snapshot
     * @return each shard's new epoch, in the order of {@code restores}
     */
    public long[] restoreShards(String writer, List<Restore> restores, boolean dropLostFutures) {
        Objects.requireNonNull(writer, "writer");
        int[] ids = new int[restores.size()];
        for (int i = 0; i < ids.length; i++) {
            Restore r = restores.get(i);
            ids[i] = r.shard();
            if (r.source().shardCount() != shardCount()) {
                throw KvServerException.invalid(
                        "cannot clone table '"
                                + r.source().name()
                                + "' ("
                                + r.source().shardCount()
                                + " shards) into table '"
                                + name()
                                + "' ("
                                + shardCount()
                                + " shards): shard counts differ");
            }
            if (r.snapshotId() < 0) {
                throw KvServerException.invalid(
                        "restore of " + shard(r.shard()) + ": negative snapshot id");
            }
        }
        checkShards(ids);
        checkUsable();
        // Each group of restores from one cut becomes one fork.
        Map<CutRef, List<Restore>> groups = new LinkedHashMap<>();
        Map<CutRef, StoreCut> cuts = new HashMap<>();
        List<Runnable> releases = new ArrayList<>();
        List<RangeStore> forks = new ArrayList<>();
        List<PreparedFilters> prepared = new ArrayList<>();
        try {
            List<String> missing = new ArrayList<>();
            for (Restore r : restores) {
                StoreCut cut = r.source().catalog.retainCutOf(r.shard(), r.snapshotId());
                if (cut == null) {
                    missing.add(
                            "snapshot "
                                    + r.snapshotId()
                                    + " of table '"
                                    + r.source().name()
                                    + "' shard "
                                    + r.shard());
                    continue;
                }
                SnapshotCatalog sourceCatalog = r.source().catalog;
                releases.add(() -> sourceCatalog.release(cut.id()));
                CutRef ref = new CutRef(r.source(), cut.id());
                cuts.put(ref, cut);
                groups.computeIfAbsent(ref, k -> new ArrayList<>()).add(r);
            }
            if (!missing.isEmpty()) {
                throw KvServerException.snapshotsNotFound(missing);
            }
            for (Map.Entry<CutRef, List<Restore>> g : groups.entrySet()) {
                CutRef ref = g.getKey();
                int forkId = newStoreId();
                RangeStore fork =
                        RangeStore.fork(
                                this,
                                forkId,
                                writer,
                                storesDir.resolve(Integer.toString(forkId)),
                                engine.tmpDir(),
                                ref.source().catalog.cutDir(ref.cutId()),
                                ref.cutId());
                forks.add(fork);
                // Opened now, outside the table's lock: a restore holds it only to commit.
                RangeDb forkDb = fork.db();
                prepared.add(
                        PreparedFilters.load(
                                engine.filters(),
                                ref.source().catalog,
                                cuts.get(ref),
                                g.getValue(),
                                forkDb));
            }
        } catch (IOException | RocksDBException | RuntimeException e) {
            for (RangeStore fork : forks) {
                discardStore(fork);
            }
            for (PreparedFilters p : prepared) {
                p.close();
            }
            releases.forEach(Runnable::run);
            if (e instanceof KvServerException k) {
                throw k;
            }
            throw KvServerException.storage("restore into table '" + name() + "' failed", e);
        }
        List<RangeStore> emptied = new ArrayList<>();
        List<RangeStore> departedFrom = new ArrayList<>();
        long epoch;
        lock.writeLock().lock();
        try {
            checkUsableLocked();
            epoch = engine.nextEpoch(maxEpoch(ids));
            Map<Integer, long[]> changes = new HashMap<>();
            int g = 0;
            for (List<Restore> group : groups.values()) {
                for (Restore r : group) {
                    changes.put(r.shard(), new long[] {epoch, forks.get(g).id()});
                }
                g++;
            }
            persistLeases(changes);
            g = 0;
            for (Map.Entry<CutRef, List<Restore>> e : groups.entrySet()) {
                RangeStore fork = forks.get(g);
                PreparedFilters filters = prepared.get(g);
                g++;
                stores.put(fork.id(), fork);
                boolean ownTable = e.getKey().source() == this;
                for (Restore r : e.getValue()) {
                    Shard s = shard(r.shard());
                    RangeStore old = s.store();
                    if (old != null) {
                        old.members().clear(r.shard());
                        departedFrom.add(old);
                    }
                    s.filter().closeFilter();
                    fork.members().set(r.shard());
                    s.assign(epoch, fork, ownTable ? e.getKey().cutId() : -1);
                    filters.install(s, fork.dbIfOpen());
                }
            }
            if (!forks.isEmpty()) {
                storeOfWriter.put(writer, forks.get(0).id());
            }
            if (dropLostFutures) {
                dropLostFutures(restores);
            }
            collectEmptied(departedFrom, emptied);
        } catch (IOException e) {
            throw KvServerException.storage("restore into table '" + name() + "' failed", e);
        } finally {
            lock.writeLock().unlock();
            for (PreparedFilters p : prepared) {
                p.close();
            }
            releases.forEach(Runnable::run);
        }
        departedFrom.addAll(forks);
        afterMembershipChange(emptied, departedFrom);
        long[] epochs = new long[ids.length];
        java.util.Arrays.fill(epochs, epoch);
        return epochs;
    }

    /** A cut of some table. */
    private record CutRef(TableStore source, long cutId) {}

    /** Drops the snapshots a restore makes unreachable: above the restored one, or all (clone). */
    @GuardedBy("lock")
    private void dropLostFutures(List<Restore> restores) {
        Map<Long, BitSet> rolledBack = new HashMap<>();
        BitSet cloned = new BitSet();
        for (Restore r : restores) {
            if (r.source() == this) {
                rolledBack.computeIfAbsent(r.snapshotId(), id -> new BitSet()).set(r.shard());
            } else {
                cloned.set(r.shard());
            }
        }
        for (Map.Entry<Long, BitSet> e : rolledBack.entrySet()) {
            catalog.dropAbove(e.getValue(), e.getKey());
        }
        if (!cloned.isEmpty()) {
            catalog.dropAbove(cloned, Long.MIN_VALUE);
        }
    }

    private BitSet checkShards(int[] ids) {
        BitSet seen = new BitSet();
        for (int id : ids) {
            checkShard(id);
            if (seen.get(id)) {
                throw KvServerException.invalid(
                        "shard " + id + " of table '" + name() + "' named twice in one request");
            }
            seen.set(id);
        }
        return seen;
    }

    private long maxEpoch(int[] ids) {
        long max = 0;
        for (int id : ids) {
            max = Math.max(max, shard(id).epoch());
        }
        return max;
    }

    /** The writer's store, made (empty) if it has none; under the write lock. */
    @GuardedBy("lock")
    private RangeStore writerStore(String writer, boolean[] created) throws IOException {
        Integer id = storeOfWriter.get(writer);
        RangeStore store = id == null ? null : stores.get(id);
        if (store != null) {
            return store;
        }
        int newId = newStoreId();
        store =
                RangeStore.create(
                        this,
                        newId,
                        writer,
                        storesDir.resolve(Integer.toString(newId)),
                        engine.tmpDir());
        stores.put(newId, store);
        storeOfWriter.put(writer, newId);
        created[0] = true;
        return store;
    }

    private int newStoreId() {
        return nextStoreId.getAndIncrement();
    }

    /**
     * Clears the ranges of shards joining {@code store} durably (a flush), so no garbage of an
     * earlier member or of a fork's cut can show through once they are members.
     */
    @GuardedBy("lock")
    private static void clearRanges(RangeStore store, List<Integer> joining)
            throws RocksDBException {
        RangeDb db = store.db();
        store.writerLock().lock();
        try (WriteBatch batch = new WriteBatch()) {
            int[] sorted = joining.stream().mapToInt(Integer::intValue).sorted().toArray();
            int i = 0;
            while (i < sorted.length) {
                int from = sorted[i];
                int to = from + 1;
                while (i + 1 < sorted.length && sorted[i + 1] == to) {
                    i++;
                    to++;
                }
                batch.deleteRange(RangeDb.rangeStart(from), RangeDb.rangeStart(to));
                i++;
            }
            db.write(batch);
            db.flush();
        } finally {
            store.writerLock().unlock();
        }
    }

    @GuardedBy("lock")
    private void collectEmptied(List<RangeStore> departedFrom, List<RangeStore> emptied) {
        for (RangeStore old : departedFrom) {
            if (old.members().isEmpty()
                    && !emptied.contains(old)
                    && stores.remove(old.id()) != null) {
                storeOfWriter.values().remove(old.id());
                try {
                    old.close(false);
                } catch (RocksDBException e) {
                    LOG.warn("Could not close emptied {}: {}", old, e.getMessage());
                }
                emptied.add(old);
            }
        }
    }

    /** Deletes emptied stores, and removes the garbage ranges of stores whose members changed. */
    private void afterMembershipChange(List<RangeStore> emptied, List<RangeStore> changed) {
        for (RangeStore store : emptied) {
            try {
                DurableFiles.discard(store.dir(), engine.trashDir());
            } catch (IOException e) {
                LOG.warn("Could not delete emptied {}: {}", store, e.getMessage());
            }
        }
        List<RangeStore> cleanup = new ArrayList<>();
        for (RangeStore store : changed) {
            if (!emptied.contains(store) && !cleanup.contains(store)) {
                cleanup.add(store);
            }
        }
        if (!cleanup.isEmpty()) {
            engine.background(() -> deleteGarbage(cleanup));
        }
    }

    private void deleteGarbage(List<RangeStore> targets) {
        lock.readLock().lock();
        try {
            if (dropped || shutDown) {
                return;
            }
            for (RangeStore store : targets) {
                if (stores.get(store.id()) == store) {
                    store.deleteGarbage(shardCount());
                }
            }
        } catch (RocksDBException | RuntimeException e) {
            LOG.warn("Could not remove the garbage ranges of table '{}': {}", name(), e.toString());
        } finally {
            lock.readLock().unlock();
        }
    }

    /** A fork that never became visible: closed and deleted. */
    private void discardStore(RangeStore store) {
        try {
            store.close(false);
        } catch (RocksDBException | RuntimeException e) {
            LOG.warn("Could not close {}: {}", store, e.toString());
        }
        try {
            DurableFiles.deleteTree(store.dir());
        } catch (IOException e) {
            LOG.warn("Could not delete {}: {}", store.dir(), e.getMessage());
        }
    }

    // ---- the lease record

    /**
     * Rewrites the lease record with {@code changes} (shard → {epoch, store id}) applied to what is
     * in memory: the commit point of every change of ownership. Under the write lock.
     */
    @GuardedBy("lock")
    private void persistLeases(Map<Integer, long[]> changes) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(LEASES_MAGIC);
            out.writeInt(LEASES_VERSION);
            out.writeInt(shardCount());
            List<long[]> rows = new ArrayList<>();
            for (int i = 0; i < shards.length(); i++) {
                long[] change = changes.get(i);
                if (change != null) {
                    rows.add(new long[] {i, change[0], change[1]});
                    continue;
                }
                Shard s = shards.get(i);
                if (s != null && (s.epoch() > 0 || s.store() != null)) {
                    rows.add(new long[] {i, s.epoch(), s.store() == null ? -1 : s.store().id()});
                }
            }
            out.writeInt(rows.size());
            for (long[] row : rows) {
                out.writeInt((int) row[0]);
                out.writeLong(row[1]);
                out.writeInt((int) row[2]);
            }
        }
        DurableFiles.writeAtomically(leasesFile, bytes.toByteArray());
    }

    /** When the lease record was last written (epoch millis), 0 if never. */
    long leasesWrittenMillis() {
        return Shard.modifiedMillis(leasesFile);
    }

    /** Loads stores and leases; deletes stores no shard is in. */
    private void recover() throws IOException {
        Map<Integer, RangeStore> onDisk = new HashMap<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(storesDir)) {
            for (Path p : ds) {
                int id;
                try {
                    id = Integer.parseInt(p.getFileName().toString());
                } catch (NumberFormatException e) {
                    DurableFiles.deleteTree(p);
                    continue;
                }
                if (!Files.exists(p.resolve(RangeStore.META_FILE))) {
                    DurableFiles.deleteTree(p);
                    continue;
                }
                onDisk.put(id, RangeStore.load(this, p));
                nextStoreId.set(Math.max(nextStoreId.get(), id + 1));
            }
        }
        if (Files.exists(leasesFile)) {
            try (DataInputStream in = new DataInputStream(Files.newInputStream(leasesFile))) {
                if (in.readInt() != LEASES_MAGIC || in.readInt() != LEASES_VERSION) {
                    throw new IOException("not a Taishan lease record: " + leasesFile);
                }
                int count = in.readInt();
                if (count != shardCount()) {
                    throw new IOException(
                            leasesFile + " is for " + count + " shards, not " + shardCount());
                }
                int rows = in.readInt();
                for (int r = 0; r < rows; r++) {
                    int shard = in.readInt();
                    long epoch = in.readLong();
                    int storeId = in.readInt();
                    RangeStore store = storeId < 0 ? null : onDisk.get(storeId);
                    if (storeId >= 0 && store == null) {
                        throw new IOException(
                                "table '"
                                        + name()
                                        + "' shard "
                                        + shard
                                        + " is in store "
                                        + storeId
                                        + ", which is missing from "
                                        + storesDir);
                    }
                    Shard s = shard(shard);
                    s.load(epoch, store);
                    if (store != null) {
                        store.members().set(shard);
                    }
                }
            }
        }
        for (RangeStore store : onDisk.values()) {
            if (store.members().isEmpty()) {
                // Made by a restore or open that did not commit, or emptied before a stop.
                DurableFiles.deleteTree(store.dir());
            } else {
                stores.put(store.id(), store);
                storeOfWriter.put(store.writer(), store.id());
            }
        }
    }

    // ---- writes and snapshots

    /** Applies a write over several shards (see {@link TableWrite}). */
    public TableWrite.Result write(List<TableWrite.ShardOps> writes, LongFunction<byte[]> staged) {
        return TableWrite.apply(this, writes, staged);
    }

    /**
     * A snapshot {@code snapshotId} of each shard in {@code shardsAndEpochs} ({shard, epoch}) now:
     * a marker at the end of each one's write order.
     */
    public List<SnapshotMeta> snapshot(
            List<long[]> shardsAndEpochs, long snapshotId, boolean pinned) {
        WriteOp marker =
                WriteOp.newBuilder()
                        .setSnapshot(
                                io.taishan.kv.proto.SnapshotMarker.newBuilder()
                                        .setSnapshotId(snapshotId)
                                        .setPinned(pinned))
                        .build();
        List<TableWrite.ShardOps> writes = new ArrayList<>(shardsAndEpochs.size());
        for (long[] se : shardsAndEpochs) {
            writes.add(new TableWrite.ShardOps((int) se[0], se[1], List.of(marker)));
        }
        List<List<SnapshotMeta>> taken = write(writes, x -> null).snapshots();
        List<SnapshotMeta> result = new ArrayList<>(taken.size());
        for (List<SnapshotMeta> t : taken) {
            result.add(t.get(0));
        }
        return result;
    }

    /**
     * Drops the local copies of snapshots that checkpoint storage holds beyond what {@code
     * durable.local-snapshots-per-shard} and {@code durable.local-snapshot-max-age} keep (see
     * {@link SnapshotCatalog#evict}).
     */
    public SnapshotCatalog.Eviction evictLocalSnapshots() {
        SnapshotCacheOptions cache = engine.options().snapshotCache();
        return catalog.evict(
                cache.keepPerShard(), System.currentTimeMillis() - cache.maxAge().toMillis());
    }

    /** Every shard snapshot of the table on this node. */
    public List<SnapshotCatalog.ShardSnapshot> allSnapshots() {
        return catalog.allSnapshots();
    }

    /**
     * Drops the unpinned snapshots below {@code watermark} of {@code shards} (all when null);
     * returns how many shard snapshots went.
     */
    public int dropSnapshotsBelow(long watermark, @Nullable BitSet onlyShards) {
        return catalog.dropBelow(watermark, onlyShards);
    }

    /** Drops snapshot {@code snapshotId} of {@code shards}, pinned or not; returns how many. */
    public int dropSnapshot(BitSet shards, long snapshotId) {
        return catalog.drop(shards, snapshotId);
    }

    /** Shard snapshots held. */
    public int snapshotCount() {
        return catalog.snapshotCount();
    }

    // ---- TTL

    /** The table's states with a TTL, and what expiry did so far. */
    TableTtl ttl() {
        return ttl;
    }

    /** Registers states with a TTL (widening a registered state's TTL, never narrowing it). */
    public void registerTtlStates(List<StateTtl> states) {
        try {
            ttl.register(states);
        } catch (IOException e) {
            throw KvServerException.storage(
                    "cannot record the TTL states of table '" + name() + "'", e);
        }
    }

    public List<StateTtl> ttlStates() {
        return ttl.states();
    }

    /** Entries expiry deleted since the server started. */
    public long expiredEntries() {
        return ttl.expiredEntries();
    }

    /** Entries expiry looked at since the server started. */
    public long sweptEntries() {
        return ttl.sweptEntries();
    }

    /** When the last sweep of the table ended (epoch millis), 0 before the first. */
    public long lastSweepMillis() {
        return ttl.lastSweepMillis();
    }

    /** The shards a sweep visits: those with a lease. */
    List<Shard> leasedShards() {
        List<Shard> result = new ArrayList<>();
        for (int i = 0; i < shards.length(); i++) {
            Shard s = shards.get(i);
            if (s != null && s.epoch() > 0 && s.store() != null) {
                result.add(s);
            }
        }
        return result;
    }

    // ---- node-wide work

    /** RocksDB's estimate of the live entries of the open stores, and how many are open. */
    public long[] estimatedEntriesOfOpenStores() {
        lock.readLock().lock();
        try {
            long entries = 0;
            long open = 0;
            for (RangeStore s : stores.values()) {
                RangeDb db = s.dbIfOpen();
                if (db != null) {
                    try {
                        entries += db.estimatedKeys();
                        open++;
                    } catch (RocksDBException e) {
                        // an estimate only
                    }
                }
            }
            return new long[] {entries, open};
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Flushes and closes the store unless it is in use or was used since {@code idleSinceNanos};
     * never blocks.
     */
    boolean tryCloseIfIdle(RangeStore store, long idleSinceNanos) {
        if (!lock.writeLock().tryLock()) {
            return false;
        }
        try {
            if (store.lastAccessNanos() - idleSinceNanos > 0
                    || stores.get(store.id()) != store
                    || scanning(store)) {
                return false;
            }
            return store.close(true);
        } catch (RocksDBException e) {
            LOG.warn("Could not close idle {}: {}", store, e.getMessage());
            return false;
        } finally {
            lock.writeLock().unlock();
        }
    }

    /** Whether a member's filter rebuild runs: it would be lost, and it ends soon. */
    private boolean scanning(RangeStore store) {
        BitSet members = store.members();
        for (int m = members.nextSetBit(0); m >= 0; m = members.nextSetBit(m + 1)) {
            if (shard(m).filter().scanning()) {
                return true;
            }
        }
        return false;
    }

    /** Adds the open stores' RocksDB properties to a sample; false when the table is busy. */
    boolean addRocksProperties(RocksSample.Builder into) {
        if (!lock.readLock().tryLock()) {
            return false;
        }
        try {
            for (RangeStore s : stores.values()) {
                RangeDb db = s.dbIfOpen();
                if (db != null) {
                    db.addProperties(into);
                    into.sampledStores++;
                }
            }
            return true;
        } catch (RocksDBException e) {
            return false;
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Periodically: re-queues the filter rebuilds of the open stores' shards that need one. */
    void maintainFilters() {
        if (!lock.readLock().tryLock()) {
            return;
        }
        try {
            for (RangeStore s : stores.values()) {
                if (!s.isOpen()) {
                    continue;
                }
                BitSet members = s.members();
                for (int m = members.nextSetBit(0); m >= 0; m = members.nextSetBit(m + 1)) {
                    shard(m).filter().maintain();
                }
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Flushes and closes every store for good (server shutdown); false if a flush failed. */
    boolean shutdown() {
        lock.writeLock().lock();
        try {
            shutDown = true;
            boolean flushed = true;
            for (RangeStore s : stores.values()) {
                try {
                    s.close(true);
                } catch (RocksDBException e) {
                    LOG.error("Could not flush {} on shutdown: {}", s, e.getMessage());
                    flushed = false;
                }
            }
            return flushed;
        } finally {
            lock.writeLock().unlock();
        }
    }

    /** Closes every store without flushing: the table is being dropped. */
    void markDropped() {
        lock.writeLock().lock();
        try {
            dropped = true;
            for (RangeStore s : stores.values()) {
                try {
                    s.close(false);
                } catch (RocksDBException e) {
                    LOG.warn("Could not close dropped {}: {}", s, e.getMessage());
                }
            }
            stores.clear();
            catalog.clear();
        } finally {
            lock.writeLock().unlock();
        }
    }

    public long diskBytes() {
        return DurableFiles.sizeOf(dir);
    }

    private void checkUsable() {
        if (dropped) {
            throw KvServerException.tableNotFound(name());
        }
        if (shutDown || engine.isClosed()) {
            throw KvServerException.shuttingDown();
        }
    }

    @GuardedBy("lock")
    private void checkUsableLocked() {
        checkUsable();
    }

    @Override
    public String toString() {
        return "table '" + name() + "'";
    }

    /**
     * The filters of a restore's shards, loaded from the cut's bundles before the table's lock is
     * taken; installed into the shards when they move, the rest freed.
     */
    private static final class PreparedFilters implements AutoCloseable {
        private final NodeFilters filters;
        private final Map<Integer, ShardFilter.Loaded> loaded = new HashMap<>();

        /** Of the shards without a loaded filter, those whose range holds keys. */
        private BitSet withKeys = new BitSet();

        private PreparedFilters(NodeFilters filters) {
            this.filters = filters;
        }

        static PreparedFilters load(
                NodeFilters filters,
                SnapshotCatalog source,
                StoreCut cut,
                List<Restore> group,
                RangeDb db) {
            PreparedFilters p = new PreparedFilters(filters);
            Map<Long, FilterBundle.Reader> bundles = new HashMap<>();
            try {
                for (Restore r : group) {
                    long holder = cut.filterHolder(r.shard());
                    if (holder < 0) {
                        continue;
                    }
                    try {
                        FilterBundle.Reader bundle = bundles.get(holder);
                        if (bundle == null) {
                            bundle =
                                    FilterBundle.open(
                                            source.cutDir(holder)
                                                    .resolve(FilterBundle.CUT_FILE_NAME));
                            bundles.put(holder, bundle);
                        }
                        ShardFilter.Loaded f = ShardFilter.loadDetached(filters, bundle, r.shard());
                        if (f != null) {
                            p.loaded.put(r.shard(), f);
                        }
                    } catch (IOException | RuntimeException e) {
                        LOG.warn(
                                "The filter of shard {} in cut {} does not read; it is rebuilt: {}",
                                r.shard(),
                                holder,
                                e.toString());
                    }
                }
            } finally {
                for (FilterBundle.Reader bundle : bundles.values()) {
                    try {
                        bundle.close();
                    } catch (IOException e) {
                        LOG.warn("Could not close {}: {}", bundle.file(), e.toString());
                    }
                }
            }
            BitSet unloaded = new BitSet();
            for (Restore r : group) {
                if (!p.loaded.containsKey(r.shard())) {
                    unloaded.set(r.shard());
                }
            }
            p.withKeys = db.shardsWithKeys(unloaded);
            return p;
        }

        /** Gives the shard its loaded filter, or an empty one or a rebuild. */
        void install(Shard shard, @Nullable RangeDb db) {
            ShardFilter.Loaded f = loaded.remove(shard.id());
            if (f != null) {
                shard.filter().adopt(f);
            } else if (db != null) {
                shard.filter().opened(db, null, withKeys);
            }
        }

        @Override
        public void close() {
            for (ShardFilter.Loaded f : loaded.values()) {
                f.close();
            }
            loaded.clear();
        }
    }
}
