package io.taishan.kv.server.rpc;

import io.taishan.kv.proto.ClusterInfoResponse;
import io.taishan.kv.proto.ClusterMember;
import io.taishan.kv.proto.CreateTableRequest;
import io.taishan.kv.proto.CreateTableResponse;
import io.taishan.kv.proto.DescribeShardsRequest;
import io.taishan.kv.proto.DescribeShardsResponse;
import io.taishan.kv.proto.DescribeTableRequest;
import io.taishan.kv.proto.DescribeTableResponse;
import io.taishan.kv.proto.DropTableRequest;
import io.taishan.kv.proto.DropTableResponse;
import io.taishan.kv.proto.HealthResponse;
import io.taishan.kv.proto.ListTablesResponse;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.proto.OpenShardResponse;
import io.taishan.kv.proto.OpenShardsRequest;
import io.taishan.kv.proto.OpenShardsResponse;
import io.taishan.kv.proto.ShardStatus;
import io.taishan.kv.proto.TableExpiry;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.protocol.ShardPlacement;
import io.taishan.kv.server.storage.Shard;
import io.taishan.kv.server.storage.StateTtl;
import io.taishan.kv.server.storage.StorageEngine;
import io.taishan.kv.server.storage.TableMeta;
import io.taishan.kv.server.storage.TableStore;

/**
 * The node and its tables: Health, ClusterInfo, the table catalog (create, describe, list, drop),
 * leases of shards (OpenShard, OpenShards) and DescribeShards.
 */
final class TableRpcs {
    private final StorageEngine storage;
    private final ShardOwnership ownership;
    private final RequestTargets targets;
    private final String version;
    private final ClusterInfoResponse clusterInfo;
    private final long startedAtMillis = System.currentTimeMillis();

    TableRpcs(
            StorageEngine storage,
            ShardOwnership ownership,
            RequestLimits limits,
            RequestTargets targets,
            String version) {
        this.storage = storage;
        this.ownership = ownership;
        this.targets = targets;
        this.version = version;
        this.clusterInfo = clusterInfo(ownership, limits.limits());
    }

    HealthResponse health(boolean shuttingDown) {
        return HealthResponse.newBuilder()
                .setStatus(shuttingDown ? "SHUTTING_DOWN" : "SERVING")
                .setNodeAddress(ownership.selfAddress())
                .setNodeIndex(ownership.selfIndex())
                .setNodeName(ownership.self().name())
                .setOpenShards(storage.openStoreCount())
                .setTables(storage.tables().size())
                .setUptimeMillis(System.currentTimeMillis() - startedAtMillis)
                .setVersion(version)
                .setFilterBytes(storage.filterBytes())
                .setFilterLimitBytes(storage.filterLimitBytes())
                .setFilterRebuilds(storage.filterRebuildsPending())
                .build();
    }

    /** Built once: the view is fixed while the node runs. */
    ClusterInfoResponse clusterInfo() {
        return clusterInfo;
    }

    private static ClusterInfoResponse clusterInfo(ShardOwnership ownership, KvLimits limits) {
        ClusterView view = ownership.view();
        ClusterInfoResponse.Builder b =
                ClusterInfoResponse.newBuilder()
                        .setSelfIndex(ownership.selfIndex())
                        .setLimits(Protos.limits(limits))
                        .setViewFingerprint(view.fingerprint())
                        .setPlacement(ShardPlacement.VERSION);
        for (ClusterNode node : view.nodes()) {
            b.addNodes(node.address());
            b.addMembers(
                    ClusterMember.newBuilder().setName(node.name()).setAddress(node.address()));
        }
        return b.build();
    }

    CreateTableResponse createTable(CreateTableRequest request) {
        StorageEngine.Creation c =
                storage.createTable(
                        request.getName(), request.getShardCount(), request.getIfNotExists());
        return CreateTableResponse.newBuilder()
                .setTable(Protos.table(c.table()))
                .setCreated(c.created())
                .build();
    }

    DescribeTableResponse describeTable(DescribeTableRequest request) {
        TableStore table = targets.table(request.getName());
        return DescribeTableResponse.newBuilder()
                .setTable(Protos.table(table.meta()))
                .setSnapshotCount(table.snapshotCount())
                .setDiskBytes(table.diskBytes())
                .build();
    }

    ListTablesResponse listTables() {
        ListTablesResponse.Builder b = ListTablesResponse.newBuilder();
        for (TableMeta t : storage.tables()) {
            b.addTables(Protos.table(t));
        }
        return b.build();
    }

    DropTableResponse dropTable(DropTableRequest request) {
        TableMeta.checkName(request.getName());
        storage.dropTable(request.getName());
        return DropTableResponse.getDefaultInstance();
    }

    OpenShardResponse openShard(OpenShardRequest request) {
        Shard shard = targets.ownedShard(targets.table(request.getTable()), request.getShard());
        return OpenShardResponse.newBuilder().setEpoch(shard.open()).build();
    }

    OpenShardsResponse openShards(OpenShardsRequest request) {
        TableStore table = targets.table(request.getTable());
        int[] shards = new int[request.getShardsCount()];
        for (int i = 0; i < shards.length; i++) {
            shards[i] = targets.ownedShard(table, request.getShards(i)).shard();
        }
        long[] epochs = table.openShards(request.getWriter(), shards, request.getWipe());
        OpenShardsResponse.Builder b = OpenShardsResponse.newBuilder();
        for (long e : epochs) {
            b.addEpochs(e);
        }
        return b.build();
    }

    /**
     * Each shard of the table this node owns, the shards it holds without owning them (left behind
     * by a change of the nodes), and the table's expiry on this node.
     */
    DescribeShardsResponse describeShards(DescribeShardsRequest request) {
        TableStore table = targets.table(request.getTable());
        DescribeShardsResponse.Builder b = DescribeShardsResponse.newBuilder();
        for (int s : targets.ownedExistingShards(table)) {
            Shard shard = table.shard(s);
            b.addShards(
                    ShardStatus.newBuilder()
                            .setShard(s)
                            .setEpoch(shard.epoch())
                            .setOpen(shard.isOpen())
                            .setFilter(Protos.filter(shard.filterStatus()))
                            .setLastActiveMillis(shard.lastActiveMillis()));
        }
        b.addAllUnownedShards(targets.unownedExistingShards(table));
        long[] entriesAndStores = table.estimatedEntriesOfOpenStores();
        long liveEntries = entriesAndStores[0];
        int openShards = (int) entriesAndStores[1];
        TableExpiry.Builder expiry =
                TableExpiry.newBuilder()
                        .setExpiredEntries(table.expiredEntries())
                        .setSweptEntries(table.sweptEntries())
                        .setLastSweepMillis(table.lastSweepMillis())
                        .setEstimatedLiveEntries(liveEntries)
                        .setOpenShards(openShards);
        for (StateTtl ttl : table.ttlStates()) {
            expiry.addStates(Protos.ttlState(ttl));
        }
        return b.setExpiry(expiry).build();
    }
}
