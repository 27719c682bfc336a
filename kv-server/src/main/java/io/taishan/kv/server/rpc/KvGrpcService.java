package io.taishan.kv.server.rpc;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.taishan.kv.proto.CloneRequest;
import io.taishan.kv.proto.CloneResponse;
import io.taishan.kv.proto.ClusterInfoRequest;
import io.taishan.kv.proto.ClusterInfoResponse;
import io.taishan.kv.proto.CreateTableRequest;
import io.taishan.kv.proto.CreateTableResponse;
import io.taishan.kv.proto.DescribeShardsRequest;
import io.taishan.kv.proto.DescribeShardsResponse;
import io.taishan.kv.proto.DescribeTableRequest;
import io.taishan.kv.proto.DescribeTableResponse;
import io.taishan.kv.proto.DropShardSnapshotsRequest;
import io.taishan.kv.proto.DropShardSnapshotsResponse;
import io.taishan.kv.proto.DropSnapshotRequest;
import io.taishan.kv.proto.DropSnapshotResponse;
import io.taishan.kv.proto.DropSnapshotsBelowRequest;
import io.taishan.kv.proto.DropSnapshotsBelowResponse;
import io.taishan.kv.proto.DropTableRequest;
import io.taishan.kv.proto.DropTableResponse;
import io.taishan.kv.proto.FetchFilterRequest;
import io.taishan.kv.proto.FetchFilterResponse;
import io.taishan.kv.proto.FetchFiltersRequest;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.GetResponse;
import io.taishan.kv.proto.HealthRequest;
import io.taishan.kv.proto.HealthResponse;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.ListSnapshotsRequest;
import io.taishan.kv.proto.ListSnapshotsResponse;
import io.taishan.kv.proto.ListTablesRequest;
import io.taishan.kv.proto.ListTablesResponse;
import io.taishan.kv.proto.MultiGetRequest;
import io.taishan.kv.proto.MultiGetResponse;
import io.taishan.kv.proto.MultiScanRequest;
import io.taishan.kv.proto.MultiScanResponse;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.proto.OpenShardResponse;
import io.taishan.kv.proto.OpenShardsRequest;
import io.taishan.kv.proto.OpenShardsResponse;
import io.taishan.kv.proto.ReadValueResponse;
import io.taishan.kv.proto.RegisterTtlStatesRequest;
import io.taishan.kv.proto.RegisterTtlStatesResponse;
import io.taishan.kv.proto.ReportTtlTimeRequest;
import io.taishan.kv.proto.ReportTtlTimeResponse;
import io.taishan.kv.proto.RestoreRequest;
import io.taishan.kv.proto.RestoreResponse;
import io.taishan.kv.proto.RestoreShardsRequest;
import io.taishan.kv.proto.RestoreShardsResponse;
import io.taishan.kv.proto.ScanRequest;
import io.taishan.kv.proto.ScanResponse;
import io.taishan.kv.proto.SnapshotRequest;
import io.taishan.kv.proto.SnapshotResponse;
import io.taishan.kv.proto.UploadSnapshotRequest;
import io.taishan.kv.proto.UploadSnapshotResponse;
import io.taishan.kv.proto.UploadValueRequest;
import io.taishan.kv.proto.UploadValueResponse;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.proto.WriteResponse;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.server.rpc.stream.LargeValueBudget;
import io.taishan.kv.server.storage.DurableSnapshots;
import io.taishan.kv.server.storage.StorageEngine;

/**
 * The gRPC face of one node. Each call is handed to the handler of its family and answered by the
 * {@link Responder}; a handler checks the whole request (names, shard ranges, ownership, limits)
 * before the storage sees it, and every failure becomes a status with an error code. The service
 * itself holds no lock, pool or rule of the storage.
 *
 * <table>
 *   <caption>Handlers</caption>
 *   <tr><th>handler</th><th>calls</th></tr>
 *   <tr><td>{@link TableRpcs}</td><td>Health, ClusterInfo, CreateTable, DescribeTable,
 *       ListTables, DropTable, OpenShard, OpenShards, DescribeShards</td></tr>
 *   <tr><td>{@link DataRpcs}</td><td>Get, MultiGet (on the network thread unless they would
 *       wait), Scan, MultiScan, Write</td></tr>
 *   <tr><td>{@link StreamRpcs}</td><td>ReadValue, UploadValue, FetchFilter, FetchFilters</td></tr>
 *   <tr><td>{@link SnapshotRpcs}</td><td>Snapshot, Restore, RestoreShards, Clone, ListSnapshots,
 *       DropSnapshot, DropShardSnapshots, DropSnapshotsBelow, UploadSnapshot</td></tr>
 *   <tr><td>{@link ExpiryRpcs}</td><td>RegisterTtlStates, ReportTtlTime</td></tr>
 * </table>
 */
public final class KvGrpcService extends KvServiceGrpc.KvServiceImplBase {
    private final Responder responder;
    private final LargeValueBudget largeValues;
    private final WriteStats writeStats = new WriteStats();
    private final TableRpcs tables;
    private final DataRpcs data;
    private final StreamRpcs streams;
    private final SnapshotRpcs snapshots;
    private final ExpiryRpcs expiry;

    /**
     * @param calls the executors the gRPC server was built with; inline reads that would wait go on
     *     on its pool
     * @param largeValueMemoryBytes the heap values moving in chunks may hold at once (see {@link
     *     LargeValueBudget})
     * @param durable snapshots to and from checkpoint storage
     */
    public KvGrpcService(
            StorageEngine storage,
            ShardOwnership ownership,
            KvLimits limits,
            String version,
            CallExecutors calls,
            long largeValueMemoryBytes,
            DurableSnapshots durable) {
        RequestLimits requestLimits = new RequestLimits(limits);
        RequestTargets targets = new RequestTargets(storage, ownership);
        this.responder = new Responder(ownership, calls.pool());
        this.largeValues = new LargeValueBudget(largeValueMemoryBytes);
        this.tables = new TableRpcs(storage, ownership, requestLimits, targets, version);
        this.data = new DataRpcs(targets, requestLimits, largeValues, writeStats);
        this.streams =
                new StreamRpcs(storage, ownership, targets, requestLimits, largeValues, responder);
        this.snapshots = new SnapshotRpcs(targets, ownership, writeStats, durable, calls.pool());
        this.expiry = new ExpiryRpcs(targets);
    }

    /** See {@link LargeValueBudget#heldBytes}. */
    public long largeValueBytesHeld() {
        return largeValues.heldBytes();
    }

    /** See {@link LargeValueBudget#peakHeldBytes}. */
    public long largeValueBytesPeak() {
        return largeValues.peakHeldBytes();
    }

    /** Stops the large-value threads; after the gRPC server has terminated. */
    public void close() {
        largeValues.close();
    }

    /** What the writes applied so far. */
    public WriteStats writeStats() {
        return writeStats;
    }

    /** From now on every call but Health fails with SHUTTING_DOWN. */
    public void beginShutdown() {
        responder.beginShutdown();
    }

    // ---- the node and its tables

    @Override
    public void health(HealthRequest request, StreamObserver<HealthResponse> response) {
        responder.respondAlways(response, "Health", () -> tables.health(responder.shuttingDown()));
    }

    @Override
    public void clusterInfo(
            ClusterInfoRequest request, StreamObserver<ClusterInfoResponse> response) {
        responder.respond(response, "ClusterInfo", tables::clusterInfo);
    }

    @Override
    public void createTable(
            CreateTableRequest request, StreamObserver<CreateTableResponse> response) {
        responder.respond(response, "CreateTable", () -> tables.createTable(request));
    }

    @Override
    public void describeTable(
            DescribeTableRequest request, StreamObserver<DescribeTableResponse> response) {
        responder.respond(response, "DescribeTable", () -> tables.describeTable(request));
    }

    @Override
    public void listTables(ListTablesRequest request, StreamObserver<ListTablesResponse> response) {
        responder.respond(response, "ListTables", tables::listTables);
    }

    @Override
    public void dropTable(DropTableRequest request, StreamObserver<DropTableResponse> response) {
        responder.respond(response, "DropTable", () -> tables.dropTable(request));
    }

    @Override
    public void openShard(OpenShardRequest request, StreamObserver<OpenShardResponse> response) {
        responder.respond(response, "OpenShard", () -> tables.openShard(request));
    }

    @Override
    public void openShards(OpenShardsRequest request, StreamObserver<OpenShardsResponse> response) {
        responder.respond(response, "OpenShards", () -> tables.openShards(request));
    }

    @Override
    public void describeShards(
            DescribeShardsRequest request, StreamObserver<DescribeShardsResponse> response) {
        responder.respond(response, "DescribeShards", () -> tables.describeShards(request));
    }

    // ---- data

    @Override
    public void get(GetRequest request, StreamObserver<GetResponse> response) {
        responder.respondInline(response, "Get", inline -> data.get(request, inline));
    }

    @Override
    public void multiGet(MultiGetRequest request, StreamObserver<MultiGetResponse> response) {
        responder.respondInline(response, "MultiGet", inline -> data.multiGet(request, inline));
    }

    @Override
    public void scan(ScanRequest request, StreamObserver<ScanResponse> response) {
        responder.respond(response, "Scan", () -> data.scan(request));
    }

    @Override
    public void multiScan(MultiScanRequest request, StreamObserver<MultiScanResponse> response) {
        responder.respond(response, "MultiScan", () -> data.multiScan(request));
    }

    @Override
    public void write(WriteRequest request, StreamObserver<WriteResponse> response) {
        responder.respond(response, "Write", () -> data.write(request));
    }

    // ---- streams

    @Override
    public void readValue(GetRequest request, StreamObserver<ReadValueResponse> response) {
        streams.readValue(request, (ServerCallStreamObserver<ReadValueResponse>) response);
    }

    @Override
    public StreamObserver<UploadValueRequest> uploadValue(
            StreamObserver<UploadValueResponse> response) {
        return streams.uploadValue((ServerCallStreamObserver<UploadValueResponse>) response);
    }

    @Override
    public void fetchFilter(
            FetchFilterRequest request, StreamObserver<FetchFilterResponse> response) {
        streams.fetchFilter(request, (ServerCallStreamObserver<FetchFilterResponse>) response);
    }

    @Override
    public void fetchFilters(
            FetchFiltersRequest request, StreamObserver<FetchFilterResponse> response) {
        streams.fetchFilters(request, (ServerCallStreamObserver<FetchFilterResponse>) response);
    }

    // ---- snapshots

    @Override
    public void snapshot(SnapshotRequest request, StreamObserver<SnapshotResponse> response) {
        responder.respond(response, "Snapshot", () -> snapshots.snapshot(request));
    }

    @Override
    public void restore(RestoreRequest request, StreamObserver<RestoreResponse> response) {
        responder.respond(response, "Restore", () -> snapshots.restore(request));
    }

    @Override
    public void restoreShards(
            RestoreShardsRequest request, StreamObserver<RestoreShardsResponse> response) {
        responder.respondLater(
                (ServerCallStreamObserver<RestoreShardsResponse>) response,
                "RestoreShards",
                () -> snapshots.restoreShards(request));
    }

    @Override
    public void uploadSnapshot(
            UploadSnapshotRequest request, StreamObserver<UploadSnapshotResponse> response) {
        responder.respondLater(
                (ServerCallStreamObserver<UploadSnapshotResponse>) response,
                "UploadSnapshot",
                () -> snapshots.uploadSnapshot(request));
    }

    @Override
    public void clone(CloneRequest request, StreamObserver<CloneResponse> response) {
        responder.respond(response, "Clone", () -> snapshots.clone(request));
    }

    @Override
    public void listSnapshots(
            ListSnapshotsRequest request, StreamObserver<ListSnapshotsResponse> response) {
        responder.respond(response, "ListSnapshots", () -> snapshots.listSnapshots(request));
    }

    @Override
    public void dropSnapshot(
            DropSnapshotRequest request, StreamObserver<DropSnapshotResponse> response) {
        responder.respond(response, "DropSnapshot", () -> snapshots.dropSnapshot(request));
    }

    @Override
    public void dropShardSnapshots(
            DropShardSnapshotsRequest request,
            StreamObserver<DropShardSnapshotsResponse> response) {
        responder.respond(
                response, "DropShardSnapshots", () -> snapshots.dropShardSnapshots(request));
    }

    @Override
    public void dropSnapshotsBelow(
            DropSnapshotsBelowRequest request,
            StreamObserver<DropSnapshotsBelowResponse> response) {
        responder.respond(
                response, "DropSnapshotsBelow", () -> snapshots.dropSnapshotsBelow(request));
    }

    // ---- expiry of TTL'd state

    @Override
    public void registerTtlStates(
            RegisterTtlStatesRequest request, StreamObserver<RegisterTtlStatesResponse> response) {
        responder.respond(response, "RegisterTtlStates", () -> expiry.registerTtlStates(request));
    }

    @Override
    public void reportTtlTime(
            ReportTtlTimeRequest request, StreamObserver<ReportTtlTimeResponse> response) {
        responder.respond(response, "ReportTtlTime", () -> expiry.reportTtlTime(request));
    }
}
