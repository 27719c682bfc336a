package io.taishan.kv.server.rpc;

import io.taishan.kv.proto.CloneRequest;
import io.taishan.kv.proto.CloneResponse;
import io.taishan.kv.proto.DropShardSnapshotsRequest;
import io.taishan.kv.proto.DropShardSnapshotsResponse;
import io.taishan.kv.proto.DropSnapshotRequest;
import io.taishan.kv.proto.DropSnapshotResponse;
import io.taishan.kv.proto.DropSnapshotsBelowRequest;
import io.taishan.kv.proto.DropSnapshotsBelowResponse;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.ListSnapshotsRequest;
import io.taishan.kv.proto.ListSnapshotsResponse;
import io.taishan.kv.proto.RestoreRequest;
import io.taishan.kv.proto.RestoreResponse;
import io.taishan.kv.proto.RestoreShardsRequest;
import io.taishan.kv.proto.RestoreShardsResponse;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.ShardRestore;
import io.taishan.kv.proto.SnapshotRequest;
import io.taishan.kv.proto.SnapshotResponse;
import io.taishan.kv.proto.UploadSnapshotRequest;
import io.taishan.kv.proto.UploadSnapshotResponse;
import io.taishan.kv.server.rpc.Responder.LongCall;
import io.taishan.kv.server.storage.DurableSnapshots;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.Shard;
import io.taishan.kv.server.storage.SnapshotMeta;
import io.taishan.kv.server.storage.TableMeta;
import io.taishan.kv.server.storage.TableStore;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Shard snapshots and what is made from them: Snapshot, Restore, RestoreShards, Clone, the listings
 * and drops of snapshots, and UploadSnapshot. How a snapshot is cut and a shard restored is the
 * storage's ({@link TableStore}); how a snapshot is copied to and fetched from checkpoint storage
 * too ({@link DurableSnapshots}). UploadSnapshot, and a RestoreShards that downloads, go on after
 * their handler returned, on the transfer threads, and finish on {@code pool}.
 */
final class SnapshotRpcs {
    private final RequestTargets targets;
    private final ShardOwnership ownership;
    private final WriteStats writeStats;
    private final DurableSnapshots durable;
    private final Executor pool;

    SnapshotRpcs(
            RequestTargets targets,
            ShardOwnership ownership,
            WriteStats writeStats,
            DurableSnapshots durable,
            Executor pool) {
        this.targets = targets;
        this.ownership = ownership;
        this.writeStats = writeStats;
        this.durable = durable;
        // The end of a transfer that finishes while the node shuts down (the pool no longer takes
        // work) still releases its cuts and deletes what a failed upload wrote.
        this.pool =
                command -> {
                    try {
                        pool.execute(command);
                    } catch (RejectedExecutionException e) {
                        command.run();
                    }
                };
    }

    SnapshotResponse snapshot(SnapshotRequest request) {
        TableStore table = targets.table(request.getTable());
        String where = "Snapshot of table '" + table.name() + "'";
        RequestTargets.checkSnapshotId(request.getSnapshotId(), where);
        List<long[]> shards = new ArrayList<>(request.getShardsCount());
        for (ShardRef ref : request.getShardsList()) {
            targets.ownedShard(table, ref.getShard());
            shards.add(new long[] {ref.getShard(), ref.getEpoch()});
        }
        List<SnapshotMeta> taken =
                table.snapshot(shards, request.getSnapshotId(), request.getPinned());
        SnapshotResponse.Builder b = SnapshotResponse.newBuilder();
        for (int i = 0; i < taken.size(); i++) {
            writeStats.snapshotTaken(taken.get(i).reused());
            b.addSnapshots(Protos.snapshot(table.name(), (int) shards.get(i)[0], taken.get(i)));
        }
        return b.build();
    }

    RestoreResponse restore(RestoreRequest request) {
        Shard shard = targets.ownedShard(targets.table(request.getTable()), request.getShard());
        RequestTargets.checkSnapshotId(request.getSnapshotId(), "Restore of " + shard);
        long epoch;
        try {
            epoch = shard.restore(request.getSnapshotId());
        } catch (KvServerException e) {
            throw explainMissing(e, List.of(shard));
        }
        return RestoreResponse.newBuilder().setEpoch(epoch).build();
    }

    /**
     * Restores the shards from snapshots on this node; first, where a shard names a durable cut of
     * a snapshot this node lacks, fetches it from checkpoint storage.
     */
    LongCall<RestoreShardsResponse> restoreShards(RestoreShardsRequest request) {
        TableStore table = targets.table(request.getTable());
        List<DurableSnapshots.ShardFetch> fetches = new ArrayList<>();
        boolean namesDurableCuts = false;
        for (ShardRestore r : request.getShardsList()) {
            Shard shard = targets.ownedShard(table, r.getShard());
            RequestTargets.checkSnapshotId(r.getSnapshotId(), "RestoreShards of " + shard);
            String source = sourceName(table, r);
            TableMeta.checkName(source);
            namesDurableCuts |= !r.getDurableCutId().isEmpty();
            fetches.add(
                    new DurableSnapshots.ShardFetch(
                            r.getShard(), source, r.getSnapshotId(), r.getDurableCutId()));
        }
        if (!namesDurableCuts) {
            return LongCall.done(restoreHeld(table, request, 0));
        }
        DurableSnapshots.Call<Long> fetch =
                durable.fetchMissing(
                        table.shardCount(),
                        fetches,
                        Protos.cutCopies(request.getDurableCutsList()),
                        pool);
        return new LongCall<>(
                fetch.result().thenApplyAsync(bytes -> restoreHeld(table, request, bytes), pool),
                fetch.cancel());
    }

    /** The restore once this node holds every snapshot it names. */
    private RestoreShardsResponse restoreHeld(
            TableStore table, RestoreShardsRequest request, long downloadedBytes) {
        Map<String, TableStore> sources = new HashMap<>();
        List<TableStore.Restore> restores = new ArrayList<>(request.getShardsCount());
        for (ShardRestore r : request.getShardsList()) {
            String name = sourceName(table, r);
            TableStore source =
                    name.equals(table.name())
                            ? table
                            : sources.computeIfAbsent(name, targets::table);
            restores.add(new TableStore.Restore(r.getShard(), source, r.getSnapshotId()));
        }
        long[] epochs;
        try {
            epochs = table.restoreShards(request.getWriter(), restores, true);
        } catch (KvServerException e) {
            List<Shard> asked = new ArrayList<>(restores.size());
            for (TableStore.Restore r : restores) {
                asked.add(r.source().shard(r.shard()));
            }
            throw explainMissing(e, asked);
        }
        RestoreShardsResponse.Builder b =
                RestoreShardsResponse.newBuilder().setDownloadedBytes(downloadedBytes);
        for (long e : epochs) {
            b.addEpochs(e);
        }
        return b.build();
    }

    private static String sourceName(TableStore table, ShardRestore r) {
        return r.getSourceTable().isEmpty() ? table.name() : r.getSourceTable();
    }

    /** Copies the cuts holding the snapshot of the named shards into checkpoint storage. */
    LongCall<UploadSnapshotResponse> uploadSnapshot(UploadSnapshotRequest request) {
        TableStore table = targets.table(request.getTable());
        String where = "UploadSnapshot of table '" + table.name() + "'";
        RequestTargets.checkSnapshotId(request.getSnapshotId(), where);
        if (request.getSharedDir().isBlank() || request.getExclusiveDir().isBlank()) {
            throw KvServerException.invalid(where + ": shared_dir and exclusive_dir are required");
        }
        int[] shards = new int[request.getShardsCount()];
        BitSet seen = new BitSet();
        for (int i = 0; i < shards.length; i++) {
            int shard = targets.ownedShard(table, request.getShards(i)).shard();
            if (seen.get(shard)) {
                throw KvServerException.invalid(where + ": shard " + shard + " named twice");
            }
            seen.set(shard);
            shards[i] = shard;
        }
        DurableSnapshots.Call<DurableSnapshots.UploadedSnapshot> upload =
                durable.upload(
                        table,
                        request.getSnapshotId(),
                        shards,
                        request.getSharedDir(),
                        request.getExclusiveDir(),
                        Set.copyOf(request.getReusablePathsList()),
                        pool);
        return new LongCall<>(upload.result().thenApply(Protos::uploaded), upload.cancel());
    }

    CloneResponse clone(CloneRequest request) {
        TableStore source = targets.table(request.getSourceTable());
        TableStore target = targets.table(request.getTargetTable());
        if (source.shardCount() != target.shardCount()) {
            throw KvServerException.invalid(
                    "cannot clone table '"
                            + source.name()
                            + "' ("
                            + source.shardCount()
                            + " shards) into table '"
                            + target.name()
                            + "' ("
                            + target.shardCount()
                            + " shards): shard counts differ");
        }
        Shard from = targets.ownedShard(source, request.getShard());
        Shard into = targets.ownedShard(target, request.getShard());
        RequestTargets.checkSnapshotId(request.getSnapshotId(), "Clone of " + from);
        long epoch;
        try {
            epoch = into.cloneFrom(from, request.getSnapshotId());
        } catch (KvServerException e) {
            throw explainMissing(e, List.of(from));
        }
        return CloneResponse.newBuilder().setEpoch(epoch).build();
    }

    /**
     * A SNAPSHOT_NOT_FOUND, told why when this node has no snapshot at all of some shard named: the
     * likeliest reason then is that the shard's owner changed with the cluster's nodes (its
     * snapshots are on the node that owned it before, which still holds them) or that this node was
     * replaced under its name with an empty data dir. Other failures pass unchanged.
     *
     * @param sources the shards whose snapshots were asked for
     */
    private KvServerException explainMissing(KvServerException e, List<Shard> sources) {
        if (e.code() != ErrorCode.SNAPSHOT_NOT_FOUND) {
            return e;
        }
        List<String> never = new ArrayList<>();
        for (Shard source : sources) {
            if (source.snapshots().isEmpty()) {
                never.add(source.toString());
            }
        }
        if (never.isEmpty()) {
            return e;
        }
        int shown = Math.min(5, never.size());
        return new KvServerException(
                ErrorCode.SNAPSHOT_NOT_FOUND,
                e.getMessage()
                        + "; "
                        + ownership.self().name()
                        + " has no snapshot at all of "
                        + String.join(", ", never.subList(0, shown))
                        + (shown < never.size() ? " and " + (never.size() - shown) + " more" : "")
                        + ": if the cluster's nodes changed since the snapshot was taken, it is"
                        + " on the node that owned the shard before, and a restore on its new"
                        + " owner cannot use it; restore the job from a canonical savepoint"
                        + " (docs/operations.md, Changing the cluster)",
                e);
    }

    /** One shard's snapshots, or those of every shard of the table this node owns. */
    ListSnapshotsResponse listSnapshots(ListSnapshotsRequest request) {
        TableStore table = targets.table(request.getTable());
        ListSnapshotsResponse.Builder b = ListSnapshotsResponse.newBuilder();
        if (request.hasShard()) {
            Shard shard = targets.ownedShard(table, request.getShard());
            for (SnapshotMeta m : shard.snapshots()) {
                b.addSnapshots(Protos.snapshot(table.name(), shard.shard(), m));
            }
            return b.build();
        }
        for (var s : table.allSnapshots()) {
            if (ownership.owns(s.shard(), table.shardCount())) {
                b.addSnapshots(Protos.snapshot(table.name(), s.shard(), s.meta()));
            }
        }
        return b.build();
    }

    DropSnapshotResponse dropSnapshot(DropSnapshotRequest request) {
        Shard shard = targets.ownedShard(targets.table(request.getTable()), request.getShard());
        RequestTargets.checkSnapshotId(request.getSnapshotId(), "DropSnapshot of " + shard);
        return DropSnapshotResponse.newBuilder()
                .setDropped(shard.dropSnapshot(request.getSnapshotId()))
                .build();
    }

    DropShardSnapshotsResponse dropShardSnapshots(DropShardSnapshotsRequest request) {
        TableStore table = targets.table(request.getTable());
        RequestTargets.checkSnapshotId(request.getSnapshotId(), "DropShardSnapshots of " + table);
        BitSet shards = new BitSet();
        for (int s : request.getShardsList()) {
            shards.set(targets.ownedShard(table, s).shard());
        }
        return DropShardSnapshotsResponse.newBuilder()
                .setDropped(table.dropSnapshot(shards, request.getSnapshotId()))
                .build();
    }

    DropSnapshotsBelowResponse dropSnapshotsBelow(DropSnapshotsBelowRequest request) {
        TableStore table = targets.table(request.getTable());
        BitSet shards = null;
        if (request.getShardsCount() > 0) {
            shards = new BitSet();
            for (int s : request.getShardsList()) {
                shards.set(targets.ownedShard(table, s).shard());
            }
        }
        int dropped = table.dropSnapshotsBelow(request.getSnapshotId(), shards);
        return DropSnapshotsBelowResponse.newBuilder().setDropped(dropped).build();
    }
}
