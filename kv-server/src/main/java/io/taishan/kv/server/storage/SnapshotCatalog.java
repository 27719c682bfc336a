package io.taishan.kv.server.storage;

import io.taishan.kv.server.durable.FileOrigins;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.TreeMap;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The snapshots of one table on this node: for each snapshot id, which {@link StoreCut} holds each
 * shard's range as it was at that shard's marker. A shard is the unit here, as Flink sees it
 * (manifests name one snapshot per key group; drops, pins and restores are per shard), while the
 * files are per cut: one cut serves every shard of its store that it captured, and a cut stays
 * until no snapshot and no other cut's filter index references it.
 *
 * <p>On disk: {@code snapshots/<id>} (one small file per snapshot id: its shards by cut as bit
 * sets, its pinned and reused shards) and {@code cuts/<id>/}. A snapshot file is replaced
 * atomically whenever a marker adds shards to it or a drop removes some; a cut directory appears by
 * a rename once complete. Recovery deletes half-made cuts and cuts nothing references.
 *
 * <p>Durable ids: a cut uploaded to checkpoint storage, or downloaded from it, has a durable id
 * ({@link DurableCutRecord}) and a record of where its files' copies are ({@code
 * durable.FileOrigins}), both beside its files. The catalog knows every cut's id, so a restore
 * naming a durable cut finds it here without a download.
 *
 * <p>Cost: a marker round adds one file write per snapshot id (bits, a few KiB for 32,768 shards),
 * never one per shard; memory is a few bit sets per snapshot.
 */
public final class SnapshotCatalog {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotCatalog.class);
    private static final int MAGIC = 0x5453534e; // "TSSN"
    private static final int VERSION = 2;

    /** Version 1 records have no uploaded and evicted shards. */
    private static final int VERSION_1 = 1;

    private final String table;
    private final Path snapshotsDir;
    private final Path cutsDir;
    private final Path trashDir;

    private final Object lock = new Object();

    @GuardedBy("lock")
    private final NavigableMap<Long, Snapshot> snapshots = new TreeMap<>();

    @GuardedBy("lock")
    private final Map<Long, CutEntry> cuts = new HashMap<>();

    @GuardedBy("lock")
    private long nextCutId = 1;

    @GuardedBy("lock")
    private final Map<Long, String> durableIds = new HashMap<>();

    @GuardedBy("lock")
    private final Map<String, Long> cutsByDurableId = new HashMap<>();

    /**
     * Orders what is written beside a cut for checkpoint storage (its durable id, the record of its
     * copies): the files are written outside {@link #lock}, by one writer at a time. Taken before
     * {@link #lock}, never after it.
     */
    private final Object durableLock = new Object();

    /** One snapshot id of the table on this node. */
    private static final class Snapshot {
        final long id;
        long createdAtMillis;
        final TreeMap<Long, BitSet> shardsByCut = new TreeMap<>();
        final BitSet pinned = new BitSet();
        final BitSet reused = new BitSet();

        /** Shards whose snapshot here is also in checkpoint storage (uploaded, or fetched). */
        final BitSet uploaded = new BitSet();

        /**
         * Shards whose snapshot is only in checkpoint storage: the local copy went ({@link
         * #evict}). Never in {@link #shardsByCut}; their pinned bit stays, so drops treat them as
         * they treated the local snapshot.
         */
        final BitSet evicted = new BitSet();

        Snapshot(long id, long createdAtMillis) {
            this.id = id;
            this.createdAtMillis = createdAtMillis;
        }

        long cutOf(int shard) {
            for (Map.Entry<Long, BitSet> e : shardsByCut.entrySet()) {
                if (e.getValue().get(shard)) {
                    return e.getKey();
                }
            }
            return -1;
        }

        boolean isEmpty() {
            return shardsByCut.isEmpty() && evicted.isEmpty();
        }

        /** Whether the shard has this snapshot, local or only in checkpoint storage. */
        boolean has(int shard) {
            return evicted.get(shard) || cutOf(shard) >= 0;
        }
    }

    /** A cut and how many references keep it. */
    private static final class CutEntry {
        final StoreCut cut;
        int refs;

        CutEntry(StoreCut cut) {
            this.cut = cut;
        }
    }

    /** A marker's outcome to record: {@code shard}'s snapshot {@code snapshotId} is {@code cut}. */
    record Marker(int shard, long snapshotId, boolean pinned, long cutId, boolean reused) {}

    SnapshotCatalog(String table, Path tableDir, Path trashDir) throws IOException {
        this.table = table;
        this.snapshotsDir = Files.createDirectories(tableDir.resolve("snapshots"));
        this.cutsDir = Files.createDirectories(tableDir.resolve("cuts"));
        this.trashDir = trashDir;
        recover();
    }

    Path cutsDir() {
        return cutsDir;
    }

    Path cutDir(long cutId) {
        return cutsDir.resolve(Long.toString(cutId));
    }

    // ---- cuts

    long newCutId() {
        synchronized (lock) {
            return nextCutId++;
        }
    }

    /**
     * Registers a complete cut (renamed into place) with one transient reference for its maker, who
     * {@link #release}s it after recording the markers that use it.
     */
    void addCut(StoreCut cut) {
        synchronized (lock) {
            CutEntry e = new CutEntry(cut);
            e.refs = 1;
            cuts.put(cut.id(), e);
            for (StoreCut.FilterRun run : cut.filterHolders()) {
                if (run.holder() != cut.id()) {
                    ref(run.holder());
                }
            }
        }
    }

    /** Takes a transient reference to the cut if it still exists; false if it is gone. */
    boolean retain(long cutId) {
        synchronized (lock) {
            CutEntry e = cuts.get(cutId);
            if (e == null) {
                return false;
            }
            e.refs++;
            return true;
        }
    }

    void release(long cutId) {
        List<CutEntry> freed = new ArrayList<>();
        synchronized (lock) {
            unref(cutId, freed);
        }
        delete(freed);
    }

    @Nullable
    StoreCut cut(long cutId) {
        synchronized (lock) {
            CutEntry e = cuts.get(cutId);
            return e == null ? null : e.cut;
        }
    }

    // ---- cuts in checkpoint storage

    /**
     * The cut's durable id, given now (and recorded beside it) if it has none yet. The caller holds
     * a reference to the cut.
     */
    String durableId(long cutId) throws IOException {
        synchronized (durableLock) {
            synchronized (lock) {
                String id = durableIds.get(cutId);
                if (id != null) {
                    return id;
                }
            }
            String id = DurableCutRecord.newId();
            DurableCutRecord.write(cutDir(cutId), id);
            synchronized (lock) {
                if (cuts.containsKey(cutId)) {
                    durableIds.put(cutId, id);
                    cutsByDurableId.put(id, cutId);
                }
            }
            return id;
        }
    }

    /**
     * The cut with this durable id, with a transient reference the caller releases; -1 if this
     * table has none.
     */
    long retainCutByDurableId(String durableId) {
        synchronized (lock) {
            Long cutId = cutsByDurableId.get(durableId);
            CutEntry e = cutId == null ? null : cuts.get(cutId);
            if (e == null) {
                return -1;
            }
            e.refs++;
            return cutId;
        }
    }

    /**
     * Registers a cut downloaded from checkpoint storage (renamed into place, its durable id
     * recorded beside it), with one transient reference for the caller, as {@link #addCut}.
     */
    void addDownloadedCut(StoreCut cut, String durableId) {
        synchronized (lock) {
            addCut(cut);
            durableIds.put(cut.id(), durableId);
            cutsByDurableId.put(durableId, cut.id());
        }
    }

    /** The ids of every cut of the table. */
    List<Long> cutIds() {
        synchronized (lock) {
            return new ArrayList<>(cuts.keySet());
        }
    }

    /** The cuts of {@code lineage} (see {@link StoreCut#lineage}), by id. */
    List<Long> cutsOfLineage(String lineage) {
        synchronized (lock) {
            List<Long> ids = new ArrayList<>();
            for (CutEntry e : cuts.values()) {
                if (lineage.equals(e.cut.lineage())) {
                    ids.add(e.cut.id());
                }
            }
            ids.sort(null);
            return ids;
        }
    }

    /**
     * Records beside the cut where its files' copies are now (what its next upload, and its forks',
     * may reuse), with those of its earlier uploads ({@link FileOrigins#after}). The caller holds a
     * reference to the cut.
     */
    void recordCopies(long cutId, FileOrigins origins) throws IOException {
        synchronized (durableLock) {
            Path dir = cutDir(cutId);
            FileOrigins merged = origins;
            try {
                Optional<FileOrigins> earlier = FileOrigins.readFrom(dir);
                if (earlier.isPresent()) {
                    merged = origins.after(earlier.get());
                }
            } catch (IOException e) {
                LOG.warn("The earlier copies of cut {} are forgotten: {}", cutId, e.getMessage());
            }
            merged.writeTo(dir);
        }
    }

    /**
     * The cut holding {@code shard}'s snapshot {@code snapshotId}, with a transient reference the
     * caller releases; null if there is no such snapshot.
     */
    @Nullable
    StoreCut retainCutOf(int shard, long snapshotId) {
        synchronized (lock) {
            Snapshot s = snapshots.get(snapshotId);
            long cutId = s == null ? -1 : s.cutOf(shard);
            if (cutId < 0) {
                return null;
            }
            CutEntry e = cuts.get(cutId);
            e.refs++;
            return e.cut;
        }
    }

    @GuardedBy("lock")
    private void ref(long cutId) {
        CutEntry e = cuts.get(cutId);
        if (e != null) {
            e.refs++;
        }
    }

    @GuardedBy("lock")
    private void unref(long cutId, List<CutEntry> freed) {
        CutEntry e = cuts.get(cutId);
        if (e == null) {
            return;
        }
        if (--e.refs > 0) {
            return;
        }
        cuts.remove(cutId);
        String durableId = durableIds.remove(cutId);
        if (durableId != null) {
            cutsByDurableId.remove(durableId);
        }
        freed.add(e);
        for (StoreCut.FilterRun run : e.cut.filterHolders()) {
            if (run.holder() != cutId) {
                unref(run.holder(), freed);
            }
        }
    }

    /** Deletes the directories of cuts nothing references any more; outside the lock. */
    private void delete(List<CutEntry> freed) {
        for (CutEntry e : freed) {
            try {
                DurableFiles.discard(cutDir(e.cut.id()), trashDir);
            } catch (IOException ex) {
                // Found again by the next start's recovery.
                LOG.warn("Could not delete cut {} of table '{}': {}", e.cut.id(), table, ex);
            }
        }
    }

    // ---- markers

    /**
     * Records what markers took, durably (one file per snapshot id touched) before it returns.
     * Where a shard already has the snapshot id: a pinned one stays as it is (a native savepoint's
     * snapshot is never replaced; the caller sees it was kept); an unpinned one is replaced, so an
     * id reused after a restore (a resubmitted job) never references a lost future's data.
     *
     * @return the snapshot each marker now has
     */
    List<SnapshotMeta> record(List<Marker> markers) {
        List<CutEntry> freed = new ArrayList<>();
        List<SnapshotMeta> result = new ArrayList<>(markers.size());
        long now = System.currentTimeMillis();
        synchronized (lock) {
            Map<Long, Snapshot> touched = new TreeMap<>();
            for (Marker m : markers) {
                Snapshot s = snapshots.computeIfAbsent(m.snapshotId(), id -> new Snapshot(id, now));
                long existing = s.cutOf(m.shard());
                if (s.has(m.shard()) && s.pinned.get(m.shard())) {
                    result.add(meta(s, m.shard(), existing));
                    continue;
                }
                if (existing >= 0) {
                    removeShard(s, m.shard(), existing, freed);
                }
                BitSet bits = s.shardsByCut.get(m.cutId());
                if (bits == null) {
                    bits = new BitSet();
                    s.shardsByCut.put(m.cutId(), bits);
                    ref(m.cutId());
                }
                bits.set(m.shard());
                s.pinned.set(m.shard(), m.pinned());
                s.reused.set(m.shard(), m.reused());
                s.uploaded.clear(m.shard());
                s.evicted.clear(m.shard());
                s.createdAtMillis = now;
                touched.put(s.id, s);
                result.add(meta(s, m.shard(), m.cutId()));
            }
            for (Snapshot s : touched.values()) {
                persist(s);
            }
        }
        delete(freed);
        return result;
    }

    @GuardedBy("lock")
    private void removeShard(Snapshot s, int shard, long cutId, List<CutEntry> freed) {
        BitSet bits = s.shardsByCut.get(cutId);
        bits.clear(shard);
        s.pinned.clear(shard);
        s.reused.clear(shard);
        s.uploaded.clear(shard);
        if (bits.isEmpty()) {
            s.shardsByCut.remove(cutId);
            unref(cutId, freed);
        }
    }

    /**
     * Removes the snapshots of {@code going} from {@code s}, local ones (their cut references with
     * them) and evicted ones; their pinned bits stay for the caller to decide. Returns how many.
     */
    @GuardedBy("lock")
    private int remove(Snapshot s, BitSet going, List<CutEntry> freed) {
        int removed = 0;
        for (Iterator<Map.Entry<Long, BitSet>> it = s.shardsByCut.entrySet().iterator();
                it.hasNext(); ) {
            Map.Entry<Long, BitSet> e = it.next();
            BitSet bits = e.getValue();
            if (!bits.intersects(going)) {
                continue;
            }
            int before = bits.cardinality();
            bits.andNot(going);
            removed += before - bits.cardinality();
            if (bits.isEmpty()) {
                // Read before remove(): TreeMap may move the successor's key into e.
                long cutId = e.getKey();
                it.remove();
                unref(cutId, freed);
            }
        }
        s.reused.andNot(going);
        s.uploaded.andNot(going);
        BitSet evicted = (BitSet) s.evicted.clone();
        evicted.and(going);
        removed += evicted.cardinality();
        s.evicted.andNot(going);
        return removed;
    }

    @GuardedBy("lock")
    private SnapshotMeta meta(Snapshot s, int shard, long cutId) {
        CutEntry e = cuts.get(cutId);
        return new SnapshotMeta(
                s.id,
                s.pinned.get(shard),
                s.createdAtMillis,
                e == null ? 0 : e.cut.sizeBytes(),
                e == null ? 0 : e.cut.fileCount(),
                s.reused.get(shard),
                s.uploaded.get(shard) || cutId < 0,
                cutId >= 0);
    }

    // ---- listing

    /** {@code shard}'s snapshot {@code snapshotId}, local or only in checkpoint storage. */
    @Nullable
    SnapshotMeta snapshot(int shard, long snapshotId) {
        synchronized (lock) {
            Snapshot s = snapshots.get(snapshotId);
            return s == null || !s.has(shard) ? null : meta(s, shard, s.cutOf(shard));
        }
    }

    /** The cut holding {@code shard}'s snapshot {@code snapshotId}, or -1. */
    long cutIdOf(int shard, long snapshotId) {
        synchronized (lock) {
            Snapshot s = snapshots.get(snapshotId);
            return s == null ? -1 : s.cutOf(shard);
        }
    }

    /** {@code shard}'s snapshots, local or only in checkpoint storage, by id. */
    List<SnapshotMeta> snapshots(int shard) {
        synchronized (lock) {
            List<SnapshotMeta> result = new ArrayList<>();
            for (Snapshot s : snapshots.values()) {
                if (s.has(shard)) {
                    result.add(meta(s, shard, s.cutOf(shard)));
                }
            }
            return result;
        }
    }

    /**
     * Every (shard, snapshot) of the table on this node, local or only in checkpoint storage, by
     * snapshot id, then shard.
     */
    List<ShardSnapshot> allSnapshots() {
        synchronized (lock) {
            List<ShardSnapshot> result = new ArrayList<>();
            for (Snapshot s : snapshots.values()) {
                BitSet all = shardsOf(s);
                all.or(s.evicted);
                for (int shard = all.nextSetBit(0); shard >= 0; shard = all.nextSetBit(shard + 1)) {
                    result.add(new ShardSnapshot(shard, meta(s, shard, s.cutOf(shard))));
                }
            }
            return result;
        }
    }

    /** One shard's snapshot. */
    public record ShardSnapshot(int shard, SnapshotMeta meta) {}

    private static BitSet shardsOf(Snapshot s) {
        BitSet all = new BitSet();
        for (BitSet bits : s.shardsByCut.values()) {
            all.or(bits);
        }
        return all;
    }

    /** Shard snapshots held, and the newest creation time among them (0 if none). */
    long newestSnapshotMillis(int shard) {
        synchronized (lock) {
            long newest = 0;
            for (Snapshot s : snapshots.values()) {
                if (s.cutOf(shard) >= 0) {
                    newest = Math.max(newest, s.createdAtMillis);
                }
            }
            return newest;
        }
    }

    int snapshotCount() {
        synchronized (lock) {
            int count = 0;
            for (Snapshot s : snapshots.values()) {
                count += shardsOf(s).cardinality();
            }
            return count;
        }
    }

    int cutCount() {
        synchronized (lock) {
            return cuts.size();
        }
    }

    // ---- the local copy as a cache of checkpoint storage

    /**
     * Shards of snapshot {@code snapshotId} whose files are now in checkpoint storage too (an
     * upload finished, or the cut was fetched from there). Durably recorded before it returns.
     */
    void markUploaded(long snapshotId, BitSet shards) {
        synchronized (lock) {
            Snapshot s = snapshots.get(snapshotId);
            if (s == null) {
                return;
            }
            BitSet local = shardsOf(s);
            local.and(shards);
            local.andNot(s.uploaded);
            if (local.isEmpty()) {
                return;
            }
            s.uploaded.or(local);
            persist(s);
        }
    }

    /** What {@link #evict} did: local copies dropped, and snapshots dropped whole. */
    public record Eviction(int evicted, int dropped) {}

    /**
     * Treats the local copies of snapshots that are in checkpoint storage as a cache, per shard:
     * the newest {@code keepPerShard} such copies stay unless taken before {@code olderThanMillis};
     * the others are <em>evicted</em>: their cut reference goes, their record stays (listed as only
     * in checkpoint storage, dropped by the job's drops as before). A snapshot that never reached
     * checkpoint storage but is older than one that did is dropped whole: with durable checkpoints
     * a checkpoint completes only once uploaded, so it was aborted or abandoned. Pinned ones of
     * those stay (a native savepoint taken without durable checkpoints is its only copy), and so
     * does everything newer than the newest uploaded snapshot (a checkpoint under way), and every
     * snapshot of a shard that never had one uploaded (durable checkpoints off: the local snapshot
     * is the checkpoint).
     *
     * <p>Cost: one pass over the bit sets of the table's snapshots, and one record write per
     * snapshot it changes; run after each upload and by the node's periodic sweep.
     */
    Eviction evict(int keepPerShard, long olderThanMillis) {
        List<CutEntry> freed = new ArrayList<>();
        int evicted = 0;
        int dropped = 0;
        synchronized (lock) {
            int[] uploadedNewer = new int[0];
            for (Snapshot s : new ArrayList<>(snapshots.descendingMap().values())) {
                BitSet local = shardsOf(s);
                BitSet evict = new BitSet();
                BitSet drop = new BitSet();
                for (int shard = local.nextSetBit(0);
                        shard >= 0;
                        shard = local.nextSetBit(shard + 1)) {
                    if (shard >= uploadedNewer.length) {
                        uploadedNewer =
                                Arrays.copyOf(
                                        uploadedNewer,
                                        Math.max(shard + 1, uploadedNewer.length * 2));
                    }
                    if (s.uploaded.get(shard)) {
                        int rank = ++uploadedNewer[shard];
                        if (rank > keepPerShard || s.createdAtMillis < olderThanMillis) {
                            evict.set(shard);
                        }
                    } else if (uploadedNewer[shard] > 0 && !s.pinned.get(shard)) {
                        drop.set(shard);
                    }
                }
                if (evict.isEmpty() && drop.isEmpty()) {
                    continue;
                }
                BitSet going = (BitSet) evict.clone();
                going.or(drop);
                remove(s, going, freed);
                s.pinned.andNot(drop);
                s.evicted.or(evict);
                evicted += evict.cardinality();
                dropped += drop.cardinality();
                persistOrDelete(s);
            }
        }
        delete(freed);
        if (evicted + dropped > 0) {
            LOG.info(
                    "Table '{}': {} local snapshot copies evicted (in checkpoint storage), {}"
                            + " abandoned snapshots dropped",
                    table,
                    evicted,
                    dropped);
        }
        return new Eviction(evicted, dropped);
    }

    // ---- drops

    /** Drops one shard's snapshot, pinned or not; false if there was none. */
    boolean drop(int shard, long snapshotId) {
        List<CutEntry> freed = new ArrayList<>();
        boolean dropped;
        synchronized (lock) {
            Snapshot s = snapshots.get(snapshotId);
            long cutId = s == null ? -1 : s.cutOf(shard);
            dropped = cutId >= 0 || (s != null && s.evicted.get(shard));
            if (cutId >= 0) {
                removeShard(s, shard, cutId, freed);
            } else if (dropped) {
                s.evicted.clear(shard);
                s.pinned.clear(shard);
            }
            if (dropped) {
                persistOrDelete(s);
            }
        }
        delete(freed);
        return dropped;
    }

    /** Drops snapshot {@code snapshotId} of {@code shards}, pinned or not; returns how many. */
    int drop(BitSet shards, long snapshotId) {
        List<CutEntry> freed = new ArrayList<>();
        int dropped = 0;
        synchronized (lock) {
            Snapshot s = snapshots.get(snapshotId);
            if (s != null) {
                dropped = remove(s, shards, freed);
                if (dropped > 0) {
                    s.pinned.andNot(shards);
                    persistOrDelete(s);
                }
            }
        }
        delete(freed);
        return dropped;
    }

    /**
     * Drops the unpinned snapshots with an id below {@code watermark} of {@code shards} (all shards
     * when null); returns how many shard snapshots went.
     */
    int dropBelow(long watermark, @Nullable BitSet shards) {
        return dropWhere(shards, id -> id < watermark);
    }

    /** Drops the unpinned snapshots of {@code shards} with an id above {@code keepUpTo}. */
    int dropAbove(BitSet shards, long keepUpTo) {
        return dropWhere(shards, id -> id > keepUpTo);
    }

    private interface IdTest {
        boolean matches(long id);
    }

    private int dropWhere(@Nullable BitSet shards, IdTest test) {
        List<CutEntry> freed = new ArrayList<>();
        int dropped = 0;
        synchronized (lock) {
            for (Snapshot s : new ArrayList<>(snapshots.values())) {
                if (!test.matches(s.id)) {
                    continue;
                }
                BitSet going = shardsOf(s);
                going.or(s.evicted);
                going.andNot(s.pinned);
                if (shards != null) {
                    going.and(shards);
                }
                if (!going.isEmpty()) {
                    dropped += remove(s, going, freed);
                    persistOrDelete(s);
                }
            }
        }
        delete(freed);
        return dropped;
    }

    /** Drops everything (the table is being dropped); files go with the table's directory. */
    void clear() {
        synchronized (lock) {
            snapshots.clear();
            cuts.clear();
            durableIds.clear();
            cutsByDurableId.clear();
        }
    }

    // ---- persistence

    @GuardedBy("lock")
    private void persistOrDelete(Snapshot s) {
        if (s.isEmpty()) {
            snapshots.remove(s.id);
            try {
                Files.deleteIfExists(snapshotFile(s.id));
                DurableFiles.fsync(snapshotsDir);
            } catch (IOException e) {
                throw KvServerException.storage(
                        "cannot delete snapshot " + s.id + " of table '" + table + "'", e);
            }
            return;
        }
        persist(s);
    }

    @GuardedBy("lock")
    private void persist(Snapshot s) {
        try {
            DurableFiles.writeAtomically(snapshotFile(s.id), toBytes(s));
        } catch (IOException e) {
            throw KvServerException.storage(
                    "cannot record snapshot " + s.id + " of table '" + table + "'", e);
        }
    }

    private Path snapshotFile(long id) {
        return snapshotsDir.resolve(Long.toString(id));
    }

    private static byte[] toBytes(Snapshot s) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            out.writeLong(s.id);
            out.writeLong(s.createdAtMillis);
            out.writeInt(s.shardsByCut.size());
            for (Map.Entry<Long, BitSet> e : s.shardsByCut.entrySet()) {
                out.writeLong(e.getKey());
                writeBits(out, e.getValue());
            }
            writeBits(out, s.pinned);
            writeBits(out, s.reused);
            writeBits(out, s.uploaded);
            writeBits(out, s.evicted);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return bytes.toByteArray();
    }

    private static void writeBits(DataOutputStream out, BitSet bits) throws IOException {
        long[] words = bits.toLongArray();
        out.writeInt(words.length);
        for (long w : words) {
            out.writeLong(w);
        }
    }

    private static BitSet readBits(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > 1 << 16) {
            throw new IOException("bad bit set length " + n);
        }
        long[] words = new long[n];
        for (int i = 0; i < n; i++) {
            words[i] = in.readLong();
        }
        return BitSet.valueOf(words);
    }

    private Snapshot readSnapshot(Path file) throws IOException {
        try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
            if (in.readInt() != MAGIC) {
                throw new IOException("not a Taishan snapshot record");
            }
            int version = in.readInt();
            if (version != VERSION && version != VERSION_1) {
                throw new IOException("snapshot record version " + version + " is not known");
            }
            Snapshot s = new Snapshot(in.readLong(), in.readLong());
            int cutCount = in.readInt();
            for (int i = 0; i < cutCount; i++) {
                s.shardsByCut.put(in.readLong(), readBits(in));
            }
            s.pinned.or(readBits(in));
            s.reused.or(readBits(in));
            if (version >= VERSION) {
                s.uploaded.or(readBits(in));
                s.evicted.or(readBits(in));
            }
            return s;
        } catch (IOException e) {
            throw new IOException("corrupt snapshot record " + file + ": " + e.getMessage(), e);
        }
    }

    /** Loads cuts and snapshots; deletes half-made cuts and cuts nothing references. */
    private void recover() throws IOException {
        long maxCut = 0;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(cutsDir)) {
            for (Path p : ds) {
                String name = p.getFileName().toString();
                long id;
                try {
                    id = Long.parseLong(name);
                } catch (NumberFormatException e) {
                    // A cut being made when the server stopped: never referenced.
                    DurableFiles.deleteTree(p);
                    continue;
                }
                maxCut = Math.max(maxCut, id);
                cuts.put(id, new CutEntry(StoreCut.read(p)));
                recoverDurableId(id, p);
            }
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(snapshotsDir)) {
            for (Path p : ds) {
                String name = p.getFileName().toString();
                if (name.endsWith(".tmp")) {
                    Files.delete(p);
                    continue;
                }
                Snapshot s = readSnapshot(p);
                snapshots.put(s.id, s);
            }
        }
        for (Snapshot s : snapshots.values()) {
            for (long cutId : s.shardsByCut.keySet()) {
                if (!cuts.containsKey(cutId)) {
                    throw new IOException(
                            "snapshot "
                                    + s.id
                                    + " of table '"
                                    + table
                                    + "' references cut "
                                    + cutId
                                    + ", which is missing from "
                                    + cutsDir);
                }
                maxCut = Math.max(maxCut, cutId);
                cuts.get(cutId).refs++;
            }
        }
        for (CutEntry e : cuts.values()) {
            for (StoreCut.FilterRun run : e.cut.filterHolders()) {
                if (run.holder() != e.cut.id()) {
                    ref(run.holder());
                }
            }
        }
        // Unreferenced cuts (made, then the server stopped before a marker recorded them).
        List<CutEntry> freed = new ArrayList<>();
        for (CutEntry e : new ArrayList<>(cuts.values())) {
            if (e.refs == 0 && cuts.containsKey(e.cut.id())) {
                e.refs = 1;
                unref(e.cut.id(), freed);
            }
        }
        delete(freed);
        nextCutId = maxCut + 1;
    }

    /**
     * A cut's durable id, if it has one. One that does not read is dropped with a warning: the cut
     * gets a new id at its next upload, and a restore naming the old one downloads its copy again.
     */
    @GuardedBy("lock")
    private void recoverDurableId(long cutId, Path cutDir) {
        try {
            Optional<String> id = DurableCutRecord.read(cutDir);
            if (id.isPresent()) {
                durableIds.put(cutId, id.get());
                cutsByDurableId.put(id.get(), cutId);
            }
        } catch (IOException e) {
            LOG.warn("Cut {} of table '{}' keeps no durable id: {}", cutId, table, e.getMessage());
        }
    }

    /**
     * What is wrong with the reference counts, for tests of a quiet table (no call holding a
     * transient reference); empty when every snapshot's cuts exist and each cut's count is what
     * snapshots and other cuts' filter runs give it.
     */
    List<String> referenceErrors() {
        synchronized (lock) {
            List<String> errors = new ArrayList<>();
            Map<Long, Integer> expected = new TreeMap<>();
            for (Snapshot s : snapshots.values()) {
                for (long cutId : s.shardsByCut.keySet()) {
                    if (!cuts.containsKey(cutId)) {
                        errors.add("snapshot " + s.id + " references missing cut " + cutId);
                    }
                    expected.merge(cutId, 1, Integer::sum);
                }
            }
            for (CutEntry e : cuts.values()) {
                for (StoreCut.FilterRun run : e.cut.filterHolders()) {
                    if (run.holder() != e.cut.id()) {
                        if (!cuts.containsKey(run.holder())) {
                            errors.add(
                                    "cut "
                                            + e.cut.id()
                                            + " keeps filters in missing cut "
                                            + run.holder());
                        }
                        expected.merge(run.holder(), 1, Integer::sum);
                    }
                }
            }
            for (CutEntry e : cuts.values()) {
                int want = expected.getOrDefault(e.cut.id(), 0);
                if (e.refs != want) {
                    errors.add("cut " + e.cut.id() + " has " + e.refs + " references, not " + want);
                }
            }
            return errors;
        }
    }

    /** Cut ids and their reference counts, for tests. */
    Map<Long, Integer> cutRefs() {
        synchronized (lock) {
            Map<Long, Integer> refs = new TreeMap<>();
            for (Map.Entry<Long, CutEntry> e : cuts.entrySet()) {
                refs.put(e.getKey(), e.getValue().refs);
            }
            return refs;
        }
    }

    Collection<Long> snapshotIds() {
        synchronized (lock) {
            return new ArrayList<>(snapshots.keySet());
        }
    }
}
