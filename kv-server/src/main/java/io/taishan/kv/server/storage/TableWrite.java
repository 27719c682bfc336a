package io.taishan.kv.server.storage;

import io.taishan.bloom.KeyHash;
import io.taishan.kv.proto.WriteOp;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongFunction;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;

/**
 * The rule of a write over several shards of one table, in one place:
 *
 * <ol>
 *   <li>Under the table's read lock, every shard's epoch is checked before anything is applied: a
 *       request with one stale lease changes nothing. The lock holds the leases until the end.
 *   <li>The shards are grouped by store. Each store's part runs under its writer lock, in rounds:
 *       round {@code r} applies, for every shard, its ops after its {@code r}-th snapshot marker
 *       and before the next one, as one atomic RocksDB batch (so every shard's ops between two
 *       markers are atomic, and in order).
 *   <li>After a round, each shard whose marker ends it gets its snapshot: the cut its live data
 *       still equals, if it had no write since a cut ({@link Shard#cleanCut}), else a new cut of
 *       the store, one per round however many shards need it. A cut taken then captures each member
 *       at exactly its marker, because the round applied every shard's ops up to its marker and
 *       none after. A writer's markers for all its shards come at one point of its write order, so
 *       its checkpoint is one cut per store.
 *   <li>The snapshots are recorded in the table's {@link SnapshotCatalog} (durably) before the
 *       write returns.
 * </ol>
 */
public final class TableWrite {
    private TableWrite() {}

    /** One shard's part of a write. */
    public record ShardOps(int shard, long epoch, List<WriteOp> ops) {}

    /**
     * What a write did: per shard part (in request order), the snapshots its markers took and its
     * filter's version after the write (-1 while it has none to serve).
     */
    public record Result(List<List<SnapshotMeta>> snapshots, long[] filterVersions) {}

    /** One shard's ops cut at its markers. */
    private static final class Part {
        final int index;
        final Shard shard;
        final List<WriteOp> ops;

        /** Op indexes of the snapshot markers, in order. */
        final int[] markers;

        Part(int index, Shard shard, List<WriteOp> ops) {
            this.index = index;
            this.shard = shard;
            this.ops = ops;
            int count = 0;
            int[] at = new int[4];
            for (int i = 0; i < ops.size(); i++) {
                if (ops.get(i).getOpCase() == WriteOp.OpCase.SNAPSHOT) {
                    if (count == at.length) {
                        at = Arrays.copyOf(at, count * 2);
                    }
                    at[count++] = i;
                }
            }
            this.markers = Arrays.copyOf(at, count);
        }

        int rounds() {
            return markers.length + 1;
        }

        int from(int round) {
            return round == 0 ? 0 : markers[round - 1] + 1;
        }

        int to(int round) {
            return round < markers.length ? markers[round] : ops.size();
        }
    }

    static Result apply(TableStore table, List<ShardOps> writes, LongFunction<byte[]> staged) {
        table.lock().readLock().lock();
        try {
            Part[] parts = new Part[writes.size()];
            for (int i = 0; i < writes.size(); i++) {
                ShardOps w = writes.get(i);
                Shard shard = table.shard(w.shard());
                shard.checkUsable();
                shard.checkEpoch(w.epoch());
                parts[i] = new Part(i, shard, w.ops());
            }
            Map<RangeStore, List<Part>> byStore = new LinkedHashMap<>();
            for (Part p : parts) {
                byStore.computeIfAbsent(p.shard.store(), s -> new ArrayList<>()).add(p);
            }
            List<SnapshotCatalog.Marker> markers = new ArrayList<>();
            List<Integer> markerParts = new ArrayList<>();
            List<Long> held = new ArrayList<>();
            try {
                for (Map.Entry<RangeStore, List<Part>> e : byStore.entrySet()) {
                    applyToStore(
                            table, e.getKey(), e.getValue(), staged, markers, markerParts, held);
                }
                List<List<SnapshotMeta>> snapshots = new ArrayList<>(parts.length);
                for (int i = 0; i < parts.length; i++) {
                    snapshots.add(new ArrayList<>(0));
                }
                if (!markers.isEmpty()) {
                    List<SnapshotMeta> recorded = table.catalog().record(markers);
                    for (int i = 0; i < recorded.size(); i++) {
                        snapshots.get(markerParts.get(i)).add(recorded.get(i));
                    }
                }
                long[] versions = new long[parts.length];
                for (Part p : parts) {
                    versions[p.index] = p.shard.filter().servedVersion();
                }
                return new Result(snapshots, versions);
            } finally {
                for (long cut : held) {
                    table.catalog().release(cut);
                }
            }
        } finally {
            table.lock().readLock().unlock();
        }
    }

    private static void applyToStore(
            TableStore table,
            RangeStore store,
            List<Part> parts,
            LongFunction<byte[]> staged,
            List<SnapshotCatalog.Marker> markers,
            List<Integer> markerParts,
            List<Long> held) {
        SnapshotCatalog catalog = table.catalog();
        store.writerLock().lock();
        try {
            int rounds = 0;
            for (Part p : parts) {
                rounds = Math.max(rounds, p.rounds());
            }
            for (int round = 0; round < rounds; round++) {
                commit(store, parts, round, staged);
                long roundCut = -1;
                for (Part p : parts) {
                    if (round >= p.markers.length) {
                        continue;
                    }
                    WriteOp marker = p.ops.get(p.markers[round]);
                    long cut = p.shard.cleanCut();
                    boolean reused = cut >= 0 && cut != roundCut && catalog.retain(cut);
                    if (reused) {
                        held.add(cut);
                    } else {
                        if (roundCut < 0) {
                            StoreCut c = store.cut(catalog.newCutId(), catalog);
                            roundCut = c.id();
                            held.add(roundCut);
                            BitSet members = store.members();
                            for (int s = members.nextSetBit(0);
                                    s >= 0;
                                    s = members.nextSetBit(s + 1)) {
                                table.shard(s).cleanCut(roundCut);
                            }
                        }
                        cut = roundCut;
                    }
                    markers.add(
                            new SnapshotCatalog.Marker(
                                    p.shard.id(),
                                    marker.getSnapshot().getSnapshotId(),
                                    marker.getSnapshot().getPinned(),
                                    cut,
                                    reused));
                    markerParts.add(p.index);
                    p.shard.touched();
                }
            }
            RangeDb db = store.dbIfOpen();
            if (db != null) {
                for (Part p : parts) {
                    p.shard.filter().rebuildIfDue(db);
                }
            }
        } catch (RocksDBException e) {
            throw KvServerException.storage("write to " + store, e);
        } finally {
            store.writerLock().unlock();
        }
    }

    /** Applies every part's ops of one round as one atomic batch, then inserts their keys. */
    private static void commit(
            RangeStore store, List<Part> parts, int round, LongFunction<byte[]> staged)
            throws RocksDBException {
        long[][] hashes = new long[parts.size()][];
        int[] hashed = new int[parts.size()];
        boolean keysAdded = false;
        try (WriteBatch batch = new WriteBatch()) {
            for (int i = 0; i < parts.size(); i++) {
                Part p = parts.get(i);
                if (round >= p.rounds()) {
                    continue;
                }
                int from = p.from(round);
                int to = p.to(round);
                if (from >= to) {
                    continue;
                }
                int id = p.shard.id();
                // The filter gets the keys of a batch only once RocksDB has applied it.
                hashes[i] = new long[to - from];
                for (int o = from; o < to; o++) {
                    WriteOp op = p.ops.get(o);
                    switch (op.getOpCase()) {
                        case PUT -> {
                            byte[] key = op.getPut().getKey().toByteArray();
                            long stagedId = op.getPut().getStagedValueId();
                            batch.put(
                                    RangeDb.key(id, key),
                                    stagedId != 0
                                            ? stagedValue(p.shard, staged, stagedId)
                                            : op.getPut().getValue().toByteArray());
                            if (!op.getPut().getScanOnly()) {
                                hashes[i][hashed[i]++] = KeyHash.hash(key);
                                keysAdded = true;
                            }
                        }
                        case DELETE ->
                                batch.delete(
                                        RangeDb.key(id, op.getDelete().getKey().toByteArray()));
                        case DELETE_RANGE -> {
                            byte[] begin = op.getDeleteRange().getBeginKey().toByteArray();
                            byte[] end = op.getDeleteRange().getEndKey().toByteArray();
                            if (Arrays.compareUnsigned(begin, end) < 0) {
                                batch.deleteRange(RangeDb.key(id, begin), RangeDb.key(id, end));
                            }
                        }
                        case APPEND -> {
                            byte[] key = op.getAppend().getKey().toByteArray();
                            long stagedId = op.getAppend().getStagedValueId();
                            batch.merge(
                                    RangeDb.key(id, key),
                                    stagedId != 0
                                            ? stagedValue(p.shard, staged, stagedId)
                                            : op.getAppend().getValue().toByteArray());
                            hashes[i][hashed[i]++] = KeyHash.hash(key);
                            keysAdded = true;
                        }
                        default ->
                                throw KvServerException.invalid(
                                        "empty write op for " + p.shard + ": no op set");
                    }
                }
                p.shard.cleanCut(-1);
                p.shard.touched();
            }
            if (batch.count() == 0) {
                return;
            }
            // Opened only now: markers alone on unchanged shards never open a closed store.
            RangeDb db = store.db();
            if (keysAdded) {
                store.beforeKeysAdded();
            }
            db.write(batch);
        }
        for (int i = 0; i < parts.size(); i++) {
            if (hashes[i] != null) {
                parts.get(i).shard.filter().inserted(hashes[i], 0, hashed[i]);
            }
        }
    }

    private static byte[] stagedValue(Shard shard, LongFunction<byte[]> staged, long id) {
        byte[] value = staged.apply(id);
        if (value == null) {
            throw KvServerException.invalid(
                    "write to " + shard + " names staged value " + id + ", which was not taken");
        }
        return value;
    }
}
