package io.taishan.kv.server.service;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.taishan.kv.client.KvLimits;
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
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.FetchFilterRequest;
import io.taishan.kv.proto.FetchFilterResponse;
import io.taishan.kv.proto.FilterHeader;
import io.taishan.kv.proto.FilterState;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.GetResponse;
import io.taishan.kv.proto.HealthRequest;
import io.taishan.kv.proto.HealthResponse;
import io.taishan.kv.proto.KeyRef;
import io.taishan.kv.proto.KeyValue;
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
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.ShardRestore;
import io.taishan.kv.proto.ShardStatus;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.ShardWriteResult;
import io.taishan.kv.proto.SnapshotInfo;
import io.taishan.kv.proto.SnapshotRequest;
import io.taishan.kv.proto.SnapshotResponse;
import io.taishan.kv.proto.TableExpiry;
import io.taishan.kv.proto.TableInfo;
import io.taishan.kv.proto.TtlLayout;
import io.taishan.kv.proto.TtlStateSpec;
import io.taishan.kv.proto.UploadValueRequest;
import io.taishan.kv.proto.UploadValueResponse;
import io.taishan.kv.proto.ValueHeader;
import io.taishan.kv.proto.ValueResult;
import io.taishan.kv.proto.WriteOp;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.proto.WriteResponse;
import io.taishan.kv.server.storage.FilterCopy;
import io.taishan.kv.server.storage.FilterStatus;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.ScanPage;
import io.taishan.kv.server.storage.Shard;
import io.taishan.kv.server.storage.SnapshotMeta;
import io.taishan.kv.server.storage.StateTtl;
import io.taishan.kv.server.storage.StorageEngine;
import io.taishan.kv.server.storage.TableMeta;
import io.taishan.kv.server.storage.TableStore;
import io.taishan.kv.server.storage.TableWrite;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gRPC face of one node: validates every request completely (names, shard ranges, ownership,
 * limits) before the storage sees it, and turns every failure into a status with an error code.
 *
 * <p>{@code Get} and {@code MultiGet} run on the network thread that read them (see {@link
 * CallExecutors}); whenever the read would wait (a shard lock held, a shard to open, a large
 * MultiGet) they go on on the call pool instead. On the data path, error messages are built only
 * once a check has failed, and values read from RocksDB go into responses without a copy.
 */
public final class KvServiceImpl extends KvServiceGrpc.KvServiceImplBase {
    private static final Logger LOG = LoggerFactory.getLogger(KvServiceImpl.class);

    /**
     * A MultiGet of more keys runs on the pool: it would hold the network thread (and every call on
     * the connections it serves) for too long.
     */
    static final int INLINE_MULTI_GET_KEYS = 128;

    private static final GetResponse CHUNKED_GET =
            GetResponse.newBuilder().setFound(true).setValueChunked(true).build();
    private static final ValueResult CHUNKED_RESULT =
            ValueResult.newBuilder().setFound(true).setValueChunked(true).build();

    private final StorageEngine storage;
    private final ClusterView cluster;
    private final RequestLimits limits;
    private final String version;
    private final CallExecutors calls;
    private final LargeValues large;
    private final long startedAtMillis = System.currentTimeMillis();
    private final WriteStats writeStats = new WriteStats();
    private volatile boolean shuttingDown;

    /**
     * @param calls the executors the gRPC server was built with; inline reads that would wait go on
     *     on its pool
     */
    public KvServiceImpl(
            StorageEngine storage,
            ClusterView cluster,
            KvLimits limits,
            String version,
            CallExecutors calls) {
        this(storage, cluster, limits, version, calls, 768L << 20);
    }

    /**
     * @param largeValueMemoryBytes the heap values moving in chunks may hold at once (see {@link
     *     LargeValues})
     */
    public KvServiceImpl(
            StorageEngine storage,
            ClusterView cluster,
            KvLimits limits,
            String version,
            CallExecutors calls,
            long largeValueMemoryBytes) {
        this.storage = storage;
        this.cluster = cluster;
        this.limits = new RequestLimits(limits);
        this.version = version;
        this.calls = calls;
        this.large = new LargeValues(largeValueMemoryBytes);
    }

    /** See {@link LargeValues#heldBytes}. */
    public long largeValueBytesHeld() {
        return large.heldBytes();
    }

    /** See {@link LargeValues#peakHeldBytes}. */
    public long largeValueBytesPeak() {
        return large.peakHeldBytes();
    }

    /** Stops the large-value threads; after the gRPC server has terminated. */
    public void close() {
        large.close();
    }

    /** What the writes applied so far. */
    public WriteStats writeStats() {
        return writeStats;
    }

    /** From now on every call but Health fails with SHUTTING_DOWN. */
    public void beginShutdown() {
        shuttingDown = true;
    }

    // ---- cluster

    @Override
    public void health(HealthRequest request, StreamObserver<HealthResponse> response) {
        respond(
                response,
                "Health",
                false,
                () ->
                        HealthResponse.newBuilder()
                                .setStatus(shuttingDown ? "SHUTTING_DOWN" : "SERVING")
                                .setNodeAddress(cluster.selfAddress())
                                .setNodeIndex(cluster.selfIndex())
                                .setOpenShards(storage.openStoreCount())
                                .setTables(storage.tables().size())
                                .setUptimeMillis(System.currentTimeMillis() - startedAtMillis)
                                .setVersion(version)
                                .setFilterBytes(storage.filterBytes())
                                .setFilterLimitBytes(storage.filterLimitBytes())
                                .setFilterRebuilds(storage.filterRebuildsPending())
                                .build());
    }

    @Override
    public void clusterInfo(
            ClusterInfoRequest request, StreamObserver<ClusterInfoResponse> response) {
        respond(
                response,
                "ClusterInfo",
                true,
                () ->
                        ClusterInfoResponse.newBuilder()
                                .addAllNodes(cluster.nodes())
                                .setSelfIndex(cluster.selfIndex())
                                .setLimits(limits.toProto())
                                .build());
    }

    // ---- tables

    @Override
    public void createTable(
            CreateTableRequest request, StreamObserver<CreateTableResponse> response) {
        respond(
                response,
                "CreateTable",
                true,
                () -> {
                    StorageEngine.Creation c =
                            storage.createTable(
                                    request.getName(),
                                    request.getShardCount(),
                                    request.getIfNotExists());
                    return CreateTableResponse.newBuilder()
                            .setTable(toProto(c.table()))
                            .setCreated(c.created())
                            .build();
                });
    }

    @Override
    public void describeTable(
            DescribeTableRequest request, StreamObserver<DescribeTableResponse> response) {
        respond(
                response,
                "DescribeTable",
                true,
                () -> {
                    TableStore table = table(request.getName());
                    return DescribeTableResponse.newBuilder()
                            .setTable(toProto(table.meta()))
                            .setSnapshotCount(table.snapshotCount())
                            .setDiskBytes(table.diskBytes())
                            .build();
                });
    }

    @Override
    public void listTables(ListTablesRequest request, StreamObserver<ListTablesResponse> response) {
        respond(
                response,
                "ListTables",
                true,
                () -> {
                    ListTablesResponse.Builder b = ListTablesResponse.newBuilder();
                    for (TableMeta t : storage.tables()) {
                        b.addTables(toProto(t));
                    }
                    return b.build();
                });
    }

    @Override
    public void dropTable(DropTableRequest request, StreamObserver<DropTableResponse> response) {
        respond(
                response,
                "DropTable",
                true,
                () -> {
                    TableMeta.checkName(request.getName());
                    storage.dropTable(request.getName());
                    return DropTableResponse.getDefaultInstance();
                });
    }

    // ---- ownership

    @Override
    public void openShard(OpenShardRequest request, StreamObserver<OpenShardResponse> response) {
        respond(
                response,
                "OpenShard",
                true,
                () -> {
                    Shard shard = ownedShard(table(request.getTable()), request.getShard());
                    return OpenShardResponse.newBuilder().setEpoch(shard.open()).build();
                });
    }

    @Override
    public void openShards(OpenShardsRequest request, StreamObserver<OpenShardsResponse> response) {
        respond(
                response,
                "OpenShards",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    int[] shards = new int[request.getShardsCount()];
                    for (int i = 0; i < shards.length; i++) {
                        shards[i] = ownedShard(table, request.getShards(i)).shard();
                    }
                    long[] epochs =
                            table.openShards(request.getWriter(), shards, request.getWipe());
                    OpenShardsResponse.Builder b = OpenShardsResponse.newBuilder();
                    for (long e : epochs) {
                        b.addEpochs(e);
                    }
                    return b.build();
                });
    }

    @Override
    public void restoreShards(
            RestoreShardsRequest request, StreamObserver<RestoreShardsResponse> response) {
        respond(
                response,
                "RestoreShards",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    Map<String, TableStore> sources = new HashMap<>();
                    List<TableStore.Restore> restores = new ArrayList<>(request.getShardsCount());
                    for (ShardRestore r : request.getShardsList()) {
                        Shard shard = ownedShard(table, r.getShard());
                        checkSnapshotId(r.getSnapshotId(), "RestoreShards of " + shard);
                        TableStore source =
                                r.getSourceTable().isEmpty()
                                                || r.getSourceTable().equals(table.name())
                                        ? table
                                        : sources.computeIfAbsent(r.getSourceTable(), this::table);
                        restores.add(
                                new TableStore.Restore(r.getShard(), source, r.getSnapshotId()));
                    }
                    long[] epochs = table.restoreShards(request.getWriter(), restores, true);
                    RestoreShardsResponse.Builder b = RestoreShardsResponse.newBuilder();
                    for (long e : epochs) {
                        b.addEpochs(e);
                    }
                    return b.build();
                });
    }

    // ---- reads

    @Override
    public void get(GetRequest request, StreamObserver<GetResponse> response) {
        respondInline(response, "Get", inline -> get(request, inline));
    }

    /** Null when {@code inline} and the read would wait. */
    @Nullable
    private GetResponse get(GetRequest request, boolean inline) {
        TableStore table = table(request.getTable());
        Shard shard = ownedShard(table, request.getShard().getShard());
        ByteString key = request.getKey();
        if (!limits.keyFits(key)) {
            throw limits.keyTooLarge(key, "Get of " + shard);
        }
        long epoch = request.getShard().getEpoch();
        int maxInline = limits.maxInlineValueBytes();
        byte[] value =
                inline
                        ? shard.getIfReady(epoch, key.toByteArray(), maxInline)
                        : shard.getInline(epoch, key.toByteArray(), maxInline);
        if (value == Shard.NOT_READY) {
            return null;
        }
        if (value == Shard.CHUNKED) {
            return CHUNKED_GET;
        }
        // Wrapped, not copied: RocksDB made this array for this call and nobody else holds it.
        return value == null
                ? GetResponse.getDefaultInstance()
                : GetResponse.newBuilder()
                        .setFound(true)
                        .setValue(UnsafeByteOperations.unsafeWrap(value))
                        .build();
    }

    @Override
    public void multiGet(MultiGetRequest request, StreamObserver<MultiGetResponse> response) {
        respondInline(response, "MultiGet", inline -> multiGet(request, inline));
    }

    /** Null when {@code inline} and the read would wait; then nothing was answered yet. */
    @Nullable
    private MultiGetResponse multiGet(MultiGetRequest request, boolean inline) {
        TableStore table = table(request.getTable());
        int serializedBytes = request.getSerializedSize();
        if (!limits.requestFits(serializedBytes)) {
            throw limits.requestTooLarge(serializedBytes, multiGetWhere(table));
        }
        if (!limits.opCountFits(request.getKeysCount())) {
            throw limits.tooManyOps(request.getKeysCount(), multiGetWhere(table));
        }
        // Keys of one shard (and epoch) are read together, in one RocksDB MultiGet.
        Map<ShardRef, List<Integer>> groups = new LinkedHashMap<>();
        for (int i = 0; i < request.getKeysCount(); i++) {
            KeyRef ref = request.getKeys(i);
            Shard shard = ownedShard(table, ref.getShard().getShard());
            if (!limits.keyFits(ref.getKey())) {
                throw limits.keyTooLarge(ref.getKey(), multiGetWhere(table) + " " + shard);
            }
            groups.computeIfAbsent(ref.getShard(), s -> new ArrayList<>()).add(i);
        }
        if (inline && request.getKeysCount() > INLINE_MULTI_GET_KEYS) {
            return null;
        }
        ValueResult[] results = new ValueResult[request.getKeysCount()];
        int maxInline = limits.maxInlineValueBytes();
        // One answer holds at most about a request's worth of values; the rest are read by chunks.
        long inlineLeft = limits.maxRequestBytes();
        for (Map.Entry<ShardRef, List<Integer>> g : groups.entrySet()) {
            List<byte[]> keys = new ArrayList<>(g.getValue().size());
            for (int i : g.getValue()) {
                keys.add(request.getKeys(i).getKey().toByteArray());
            }
            Shard shard = table.shard(g.getKey().getShard());
            long epoch = g.getKey().getEpoch();
            List<byte[]> values =
                    inline
                            ? shard.multiGetIfReady(epoch, keys, maxInline, inlineLeft)
                            : shard.multiGetInline(epoch, keys, maxInline, inlineLeft);
            if (values == null) {
                return null;
            }
            for (int j = 0; j < values.size(); j++) {
                byte[] v = values.get(j);
                ValueResult r;
                if (v == null) {
                    r = ValueResult.getDefaultInstance();
                } else if (v == Shard.CHUNKED) {
                    r = CHUNKED_RESULT;
                } else {
                    inlineLeft -= v.length;
                    // Wrapped: RocksDB made each array for this call and nobody else holds it.
                    r =
                            ValueResult.newBuilder()
                                    .setFound(true)
                                    .setValue(UnsafeByteOperations.unsafeWrap(v))
                                    .build();
                }
                results[g.getValue().get(j)] = r;
            }
        }
        return MultiGetResponse.newBuilder().addAllValues(Arrays.asList(results)).build();
    }

    private static String multiGetWhere(TableStore table) {
        return "MultiGet on table '" + table.name() + "'";
    }

    @Override
    public void scan(ScanRequest request, StreamObserver<ScanResponse> response) {
        respond(response, "Scan", true, () -> scanPage(table(request.getTable()), request));
    }

    /**
     * The first page of each scan, in order, until the answer holds a request's worth of bytes; the
     * scans after that get no page and are asked again by the client.
     */
    @Override
    public void multiScan(MultiScanRequest request, StreamObserver<MultiScanResponse> response) {
        respond(
                response,
                "MultiScan",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    if (!limits.opCountFits(request.getScansCount())) {
                        throw limits.tooManyOps(
                                request.getScansCount(),
                                "MultiScan on table '" + table.name() + "'");
                    }
                    MultiScanResponse.Builder b = MultiScanResponse.newBuilder();
                    long bytes = 0;
                    for (ScanRequest scan : request.getScansList()) {
                        if (!scan.getTable().equals(table.name())) {
                            throw KvServerException.invalid(
                                    "MultiScan on table '"
                                            + table.name()
                                            + "' holds a scan of table '"
                                            + scan.getTable()
                                            + "'");
                        }
                        if (bytes >= limits.maxRequestBytes()) {
                            break;
                        }
                        ScanResponse page = scanPage(table, scan);
                        bytes += page.getSerializedSize();
                        b.addPages(page);
                    }
                    return b.build();
                });
    }

    private ScanResponse scanPage(TableStore table, ScanRequest request) {
        Shard shard = ownedShard(table, request.getShard().getShard());
        checkScanBound(request.getStartKey(), shard);
        checkScanBound(request.getEndKey(), shard);
        checkScanBound(request.getPrefix(), shard);
        if (request.getLimit() < 0) {
            throw KvServerException.invalid(
                    "Scan of " + shard + ": negative page limit " + request.getLimit());
        }
        if (!request.getEndKey().isEmpty()
                && ByteString.unsignedLexicographicalComparator()
                                .compare(request.getStartKey(), request.getEndKey())
                        > 0) {
            throw KvServerException.invalid(
                    "Scan of " + shard + ": start key is after end key (bad range)");
        }
        ScanPage page =
                shard.scanInline(
                        request.getShard().getEpoch(),
                        request.getStartKey().toByteArray(),
                        request.getEndKey().toByteArray(),
                        request.getPrefix().toByteArray(),
                        limits.scanPageEntries(request.getLimit()),
                        limits.scanPageBytes(),
                        request.getKeysOnly(),
                        limits.maxInlineValueBytes());
        // Wrapped, not copied: the iterator made every key and value array for this page (the
        // empty value of a keys-only scan is shared, and never written).
        ScanResponse.Builder b = ScanResponse.newBuilder().setHasMore(page.hasMore());
        for (ScanPage.Entry e : page.entries()) {
            KeyValue.Builder kv =
                    KeyValue.newBuilder().setKey(UnsafeByteOperations.unsafeWrap(e.key()));
            if (e.value() == Shard.CHUNKED) {
                kv.setValueChunked(true);
            } else {
                kv.setValue(UnsafeByteOperations.unsafeWrap(e.value()));
            }
            b.addEntries(kv);
        }
        if (page.hasMore()) {
            b.setNextStartKey(UnsafeByteOperations.unsafeWrap(page.nextStartKey()));
        }
        return b.build();
    }

    private void checkScanBound(ByteString bound, Shard shard) {
        if (!limits.keyFits(bound)) {
            throw limits.keyTooLarge(bound, "Scan of " + shard);
        }
    }

    // ---- writes

    @Override
    public void write(WriteRequest request, StreamObserver<WriteResponse> response) {
        respond(
                response,
                "Write",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    Map<Long, byte[]> staged = new HashMap<>(0);
                    try {
                        int[] opCounts = validateWrite(table, request, staged);
                        WriteResponse written = applyWrite(table, request, staged);
                        writeStats.applied(request.getShardsCount(), opCounts);
                        return written;
                    } finally {
                        // The values are in RocksDB (or the write failed): their heap goes.
                        for (byte[] v : staged.values()) {
                            large.release(v.length);
                        }
                    }
                });
    }

    private WriteResponse applyWrite(
            TableStore table, WriteRequest request, Map<Long, byte[]> staged) {
        List<TableWrite.ShardOps> writes = new ArrayList<>(request.getShardsCount());
        for (ShardWrite w : request.getShardsList()) {
            writes.add(new TableWrite.ShardOps(w.getShard(), w.getEpoch(), w.getOpsList()));
        }
        TableWrite.Result applied = table.write(writes, staged::get);
        WriteResponse.Builder b = WriteResponse.newBuilder();
        for (int i = 0; i < writes.size(); i++) {
            int shard = writes.get(i).shard();
            ShardWriteResult.Builder r = ShardWriteResult.newBuilder().setShard(shard);
            for (SnapshotMeta m : applied.snapshots().get(i)) {
                writeStats.snapshotTaken(m.reused());
                r.addSnapshots(toProto(table.name(), shard, m));
            }
            if (applied.filterVersions()[i] >= 0) {
                r.setFilterVersion(applied.filterVersions()[i]);
            }
            b.addResults(r);
        }
        return b.build();
    }

    /**
     * Checks the request and takes the staged values its ops name into {@code staged}; returns the
     * request's ops by kind ({@link WriteStats#newOpCounts}).
     */
    private int[] validateWrite(TableStore table, WriteRequest request, Map<Long, byte[]> staged) {
        int serializedBytes = request.getSerializedSize();
        if (!limits.requestFits(serializedBytes)) {
            throw limits.requestTooLarge(serializedBytes, writeWhere(table));
        }
        long ops = 0;
        for (ShardWrite w : request.getShardsList()) {
            ops += w.getOpsCount();
        }
        if (!limits.opCountFits(ops)) {
            throw limits.tooManyOps(ops, writeWhere(table));
        }
        Set<Integer> seen = new HashSet<>();
        int[] opCounts = WriteStats.newOpCounts();
        for (ShardWrite w : request.getShardsList()) {
            Shard shard = ownedShard(table, w.getShard());
            if (!seen.add(w.getShard())) {
                throw KvServerException.invalid(
                        writeWhere(table)
                                + ": shard "
                                + w.getShard()
                                + " appears twice in one request");
            }
            for (int i = 0; i < w.getOpsCount(); i++) {
                WriteOp op = w.getOps(i);
                validateOp(op, table, shard, i, staged);
                opCounts[op.getOpCase().ordinal()]++;
            }
        }
        return opCounts;
    }

    private static String writeWhere(TableStore table) {
        return "Write to table '" + table.name() + "'";
    }

    /** Where an op is, for its error message; built only when the op is refused. */
    private static String opWhere(TableStore table, Shard shard, int op) {
        return writeWhere(table) + ", " + shard + ", op #" + op;
    }

    private void validateOp(
            WriteOp op, TableStore table, Shard shard, int i, Map<Long, byte[]> staged) {
        switch (op.getOpCase()) {
            case PUT -> {
                checkKey(op.getPut().getKey(), table, shard, i);
                checkValue(op.getPut().getValue(), table, shard, i);
                takeStaged(
                        op.getPut().getStagedValueId(),
                        op.getPut().getValue(),
                        table,
                        shard,
                        i,
                        staged);
            }
            case DELETE -> checkKey(op.getDelete().getKey(), table, shard, i);
            case DELETE_RANGE -> {
                checkKey(op.getDeleteRange().getBeginKey(), table, shard, i);
                checkKey(op.getDeleteRange().getEndKey(), table, shard, i);
                if (ByteString.unsignedLexicographicalComparator()
                                .compare(
                                        op.getDeleteRange().getBeginKey(),
                                        op.getDeleteRange().getEndKey())
                        > 0) {
                    throw KvServerException.invalid(
                            opWhere(table, shard, i)
                                    + ": delete-range begin key is after its end key (bad range)");
                }
            }
            case APPEND -> {
                checkKey(op.getAppend().getKey(), table, shard, i);
                checkValue(op.getAppend().getValue(), table, shard, i);
                takeStaged(
                        op.getAppend().getStagedValueId(),
                        op.getAppend().getValue(),
                        table,
                        shard,
                        i,
                        staged);
            }
            case SNAPSHOT -> {
                long id = op.getSnapshot().getSnapshotId();
                if (id < 0) {
                    checkSnapshotId(id, opWhere(table, shard, i));
                }
            }
            case OP_NOT_SET ->
                    throw KvServerException.invalid(opWhere(table, shard, i) + ": no op set");
        }
    }

    private void takeStaged(
            long id,
            ByteString inlineValue,
            TableStore table,
            Shard shard,
            int op,
            Map<Long, byte[]> staged) {
        if (id == 0) {
            return;
        }
        if (!inlineValue.isEmpty()) {
            throw KvServerException.invalid(
                    opWhere(table, shard, op) + ": both a value and a staged value id");
        }
        if (staged.containsKey(id)) {
            throw KvServerException.invalid(
                    opWhere(table, shard, op) + ": staged value " + id + " named twice");
        }
        LargeValues.Staged s = large.take(id, table.name(), shard.shard());
        if (s == null) {
            throw KvServerException.invalid(
                    opWhere(table, shard, op)
                            + ": no staged value "
                            + Long.toUnsignedString(id)
                            + " for this shard (never uploaded, already written, or expired"
                            + " after 2 minutes unused)");
        }
        staged.put(id, s.value());
    }

    private void checkKey(ByteString key, TableStore table, Shard shard, int op) {
        if (!limits.keyFits(key)) {
            throw limits.keyTooLarge(key, opWhere(table, shard, op));
        }
    }

    private void checkValue(ByteString value, TableStore table, Shard shard, int op) {
        if (!limits.valueFits(value)) {
            throw limits.valueTooLarge(value, opWhere(table, shard, op));
        }
    }

    // ---- large values

    /**
     * Streams one value of any size: its size is read without the value (so a waiting read holds
     * nothing), then the value's bytes are reserved in the large-value budget, the value is read
     * whole (RocksDB's Java API reads no part of a value) and sent in chunks, each when the
     * transport is ready for it, on a large-value thread.
     */
    @Override
    public void readValue(GetRequest request, StreamObserver<ReadValueResponse> response) {
        ServerCallStreamObserver<ReadValueResponse> call =
                (ServerCallStreamObserver<ReadValueResponse>) response;
        ValueStream stream;
        try {
            if (shuttingDown) {
                throw KvServerException.shuttingDown();
            }
            Shard shard = ownedShard(table(request.getTable()), request.getShard().getShard());
            if (!limits.keyFits(request.getKey())) {
                throw limits.keyTooLarge(request.getKey(), "ReadValue of " + shard);
            }
            stream =
                    new ValueStream(
                            call,
                            shard,
                            request.getShard().getEpoch(),
                            request.getKey().toByteArray());
        } catch (RuntimeException e) {
            fail(call, "ReadValue", e);
            return;
        }
        try {
            large.executor().execute(stream);
        } catch (RejectedExecutionException e) {
            call.onError(ErrorStatus.of(KvServerException.shuttingDown()));
        }
    }

    /** One ReadValue response stream. */
    private final class ValueStream implements Runnable {
        private final ServerCallStreamObserver<ReadValueResponse> call;
        private final Shard shard;
        private final long epoch;
        private final byte[] key;
        private final PacedSender<ReadValueResponse> out;

        ValueStream(
                ServerCallStreamObserver<ReadValueResponse> call,
                Shard shard,
                long epoch,
                byte[] key) {
            this.call = call;
            this.shard = shard;
            this.epoch = epoch;
            this.key = key;
            this.out = new PacedSender<>(call);
        }

        @Override
        public void run() {
            long reserved = 0;
            try {
                if (call.isCancelled()) {
                    return;
                }
                long size = shard.valueSize(epoch, key);
                if (size > 0) {
                    checkReadable(size);
                    if (!large.reserve(size, call::isCancelled)) {
                        return;
                    }
                    reserved = size;
                }
                byte[] value = size < 0 ? null : shard.get(epoch, key);
                if (value != null && value.length > reserved) {
                    // It grew since its size was read.
                    checkReadable(value.length);
                    long more = value.length - reserved;
                    if (!large.reserve(more, call::isCancelled)) {
                        return;
                    }
                    reserved += more;
                }
                send(
                        ReadValueResponse.newBuilder()
                                .setHeader(
                                        ValueHeader.newBuilder()
                                                .setFound(value != null)
                                                .setValueBytes(value == null ? 0 : value.length))
                                .build());
                if (value != null) {
                    for (int at = 0; at < value.length; at += LargeValues.CHUNK_BYTES) {
                        int n = Math.min(LargeValues.CHUNK_BYTES, value.length - at);
                        // Wrapped: this array was read for this call and is never written.
                        send(
                                ReadValueResponse.newBuilder()
                                        .setChunk(UnsafeByteOperations.unsafeWrap(value, at, n))
                                        .build());
                    }
                }
                call.onCompleted();
            } catch (ClientGone e) {
                LOG.debug("ReadValue of {} cancelled by the client", shard);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                call.onError(ErrorStatus.of(KvServerException.shuttingDown()));
            } catch (OutOfMemoryError e) {
                call.onError(
                        ErrorStatus.of(
                                ErrorCode.STORAGE_ERROR,
                                "ReadValue of "
                                        + shard
                                        + ": the kv-server's heap cannot hold the value (raise"
                                        + " its -Xmx or lower large-values.memory-bytes)"));
            } catch (RuntimeException e) {
                fail(call, "ReadValue", e);
            } finally {
                if (reserved > 0) {
                    large.release(reserved);
                }
            }
        }

        private void checkReadable(long size) {
            if (!limits.largeValueFits(size)) {
                throw limits.largeValueTooLarge(
                        size,
                        "ReadValue of "
                                + shard
                                + " (a list appended past the limit: every operand fit, their"
                                + " join does not)");
            }
        }

        private void send(ReadValueResponse message) throws ClientGone {
            out.send(message);
        }
    }

    /**
     * Receives one value into the staging area. The header's size is reserved in the large-value
     * budget before any chunk is asked for (inbound flow control: the client cannot send what the
     * server has no room for), waiting on a large-value thread when it does not fit at once.
     */
    @Override
    public StreamObserver<UploadValueRequest> uploadValue(
            StreamObserver<UploadValueResponse> response) {
        ServerCallStreamObserver<UploadValueResponse> call =
                (ServerCallStreamObserver<UploadValueResponse>) response;
        call.disableAutoRequest();
        Upload upload = new Upload(call);
        call.setOnCancelHandler(upload::abandon);
        call.request(1);
        return upload;
    }

    /** One UploadValue call; gRPC calls it serially, a large-value thread may too (the grant). */
    private final class Upload implements StreamObserver<UploadValueRequest> {
        private final ServerCallStreamObserver<UploadValueResponse> call;
        @Nullable private String table;
        private int shard;
        @Nullable private byte[] value;
        private int filled;
        private long reserved;
        private boolean done;

        Upload(ServerCallStreamObserver<UploadValueResponse> call) {
            this.call = call;
        }

        @Override
        public synchronized void onNext(UploadValueRequest request) {
            if (done) {
                return;
            }
            try {
                if (table == null) {
                    header(request);
                } else {
                    chunk(request);
                }
            } catch (RuntimeException e) {
                abandon();
                fail(call, "UploadValue", e);
            }
        }

        private void header(UploadValueRequest request) {
            if (shuttingDown) {
                throw KvServerException.shuttingDown();
            }
            if (!request.hasHeader()) {
                throw KvServerException.invalid("UploadValue: the stream must start with a header");
            }
            TableStore t = table(request.getTable());
            Shard s = ownedShard(t, request.getHeader().getShard().getShard());
            long size = request.getHeader().getValueBytes();
            if (size < 0) {
                throw KvServerException.invalid("UploadValue to " + s + ": negative size " + size);
            }
            if (!limits.largeValueFits(size)) {
                throw limits.largeValueTooLarge(size, "UploadValue to " + s);
            }
            table = t.name();
            shard = s.shard();
            if (large.tryReserve(size)) {
                granted(size);
                return;
            }
            try {
                large.executor()
                        .execute(
                                () -> {
                                    try {
                                        if (large.reserve(size, call::isCancelled)) {
                                            synchronized (this) {
                                                if (done) {
                                                    large.release(size);
                                                } else {
                                                    granted(size);
                                                }
                                            }
                                        }
                                    } catch (InterruptedException e) {
                                        Thread.currentThread().interrupt();
                                    } catch (RuntimeException e) {
                                        synchronized (this) {
                                            abandon();
                                            fail(call, "UploadValue", e);
                                        }
                                    }
                                });
            } catch (RejectedExecutionException e) {
                throw KvServerException.shuttingDown();
            }
        }

        private void granted(long size) {
            reserved = size;
            try {
                value = new byte[(int) size];
            } catch (OutOfMemoryError e) {
                throw new KvServerException(
                        ErrorCode.STORAGE_ERROR,
                        "UploadValue of "
                                + size
                                + " bytes: the kv-server's heap cannot hold the value (raise its"
                                + " -Xmx or lower large-values.memory-bytes)");
            }
            call.request(1);
        }

        private void chunk(UploadValueRequest request) {
            if (!request.getTable().equals(table) || request.hasHeader()) {
                throw KvServerException.invalid(
                        "UploadValue: a chunk of another table, or a second header");
            }
            ByteString chunk = request.getChunk();
            if (chunk.size() > value.length - filled) {
                throw KvServerException.invalid(
                        "UploadValue to table '"
                                + table
                                + "' shard "
                                + shard
                                + ": more bytes than the header's "
                                + value.length);
            }
            chunk.copyTo(value, filled);
            filled += chunk.size();
            call.request(1);
        }

        @Override
        public synchronized void onCompleted() {
            if (done) {
                return;
            }
            try {
                if (value == null || filled != value.length) {
                    throw KvServerException.invalid(
                            "UploadValue to table '"
                                    + table
                                    + "' shard "
                                    + shard
                                    + ": the stream ended after "
                                    + filled
                                    + " of "
                                    + (value == null ? "?" : value.length)
                                    + " bytes");
                }
            } catch (RuntimeException e) {
                abandon();
                fail(call, "UploadValue", e);
                return;
            }
            done = true;
            // The reservation now belongs to the staged value (released by its Write or expiry).
            long id = large.stage(table, shard, value);
            value = null;
            reserved = 0;
            call.onNext(UploadValueResponse.newBuilder().setStagedValueId(id).build());
            call.onCompleted();
        }

        @Override
        public synchronized void onError(Throwable t) {
            abandon();
        }

        /** Ends the call's hold on the budget; nothing is staged. */
        synchronized void abandon() {
            done = true;
            value = null;
            if (reserved > 0) {
                large.release(reserved);
                reserved = 0;
            }
        }
    }

    // ---- snapshots

    @Override
    public void snapshot(SnapshotRequest request, StreamObserver<SnapshotResponse> response) {
        respond(
                response,
                "Snapshot",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    String where = "Snapshot of table '" + table.name() + "'";
                    checkSnapshotId(request.getSnapshotId(), where);
                    List<long[]> shards = new ArrayList<>(request.getShardsCount());
                    for (ShardRef ref : request.getShardsList()) {
                        ownedShard(table, ref.getShard());
                        shards.add(new long[] {ref.getShard(), ref.getEpoch()});
                    }
                    List<SnapshotMeta> taken =
                            table.snapshot(shards, request.getSnapshotId(), request.getPinned());
                    SnapshotResponse.Builder b = SnapshotResponse.newBuilder();
                    for (int i = 0; i < taken.size(); i++) {
                        writeStats.snapshotTaken(taken.get(i).reused());
                        b.addSnapshots(toProto(table.name(), (int) shards.get(i)[0], taken.get(i)));
                    }
                    return b.build();
                });
    }

    @Override
    public void restore(RestoreRequest request, StreamObserver<RestoreResponse> response) {
        respond(
                response,
                "Restore",
                true,
                () -> {
                    Shard shard = ownedShard(table(request.getTable()), request.getShard());
                    checkSnapshotId(request.getSnapshotId(), "Restore of " + shard);
                    long epoch = shard.restore(request.getSnapshotId());
                    return RestoreResponse.newBuilder().setEpoch(epoch).build();
                });
    }

    @Override
    public void clone(CloneRequest request, StreamObserver<CloneResponse> response) {
        respond(
                response,
                "Clone",
                true,
                () -> {
                    TableStore source = table(request.getSourceTable());
                    TableStore target = table(request.getTargetTable());
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
                    Shard from = ownedShard(source, request.getShard());
                    Shard into = ownedShard(target, request.getShard());
                    checkSnapshotId(request.getSnapshotId(), "Clone of " + from);
                    long epoch = into.cloneFrom(from, request.getSnapshotId());
                    return CloneResponse.newBuilder().setEpoch(epoch).build();
                });
    }

    @Override
    public void listSnapshots(
            ListSnapshotsRequest request, StreamObserver<ListSnapshotsResponse> response) {
        respond(
                response,
                "ListSnapshots",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    ListSnapshotsResponse.Builder b = ListSnapshotsResponse.newBuilder();
                    if (request.hasShard()) {
                        Shard shard = ownedShard(table, request.getShard());
                        for (SnapshotMeta m : shard.snapshots()) {
                            b.addSnapshots(toProto(table.name(), shard.shard(), m));
                        }
                        return b.build();
                    }
                    for (var s : table.allSnapshots()) {
                        if (cluster.owns(s.shard(), table.shardCount())) {
                            b.addSnapshots(toProto(table.name(), s.shard(), s.meta()));
                        }
                    }
                    return b.build();
                });
    }

    @Override
    public void dropSnapshot(
            DropSnapshotRequest request, StreamObserver<DropSnapshotResponse> response) {
        respond(
                response,
                "DropSnapshot",
                true,
                () -> {
                    Shard shard = ownedShard(table(request.getTable()), request.getShard());
                    checkSnapshotId(request.getSnapshotId(), "DropSnapshot of " + shard);
                    return DropSnapshotResponse.newBuilder()
                            .setDropped(shard.dropSnapshot(request.getSnapshotId()))
                            .build();
                });
    }

    @Override
    public void dropShardSnapshots(
            DropShardSnapshotsRequest request,
            StreamObserver<DropShardSnapshotsResponse> response) {
        respond(
                response,
                "DropShardSnapshots",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    checkSnapshotId(request.getSnapshotId(), "DropShardSnapshots of " + table);
                    BitSet shards = new BitSet();
                    for (int s : request.getShardsList()) {
                        shards.set(ownedShard(table, s).shard());
                    }
                    return DropShardSnapshotsResponse.newBuilder()
                            .setDropped(table.dropSnapshot(shards, request.getSnapshotId()))
                            .build();
                });
    }

    @Override
    public void dropSnapshotsBelow(
            DropSnapshotsBelowRequest request,
            StreamObserver<DropSnapshotsBelowResponse> response) {
        respond(
                response,
                "DropSnapshotsBelow",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    BitSet shards = null;
                    if (request.getShardsCount() > 0) {
                        shards = new BitSet();
                        for (int s : request.getShardsList()) {
                            shards.set(ownedShard(table, s).shard());
                        }
                    }
                    int dropped = table.dropSnapshotsBelow(request.getSnapshotId(), shards);
                    return DropSnapshotsBelowResponse.newBuilder().setDropped(dropped).build();
                });
    }

    // ---- expiry of TTL'd state

    @Override
    public void registerTtlStates(
            RegisterTtlStatesRequest request, StreamObserver<RegisterTtlStatesResponse> response) {
        respond(
                response,
                "RegisterTtlStates",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    List<StateTtl> states = new ArrayList<>(request.getStatesCount());
                    for (TtlStateSpec spec : request.getStatesList()) {
                        states.add(toStateTtl(table.name(), spec));
                    }
                    table.registerTtlStates(states);
                    return RegisterTtlStatesResponse.getDefaultInstance();
                });
    }

    private static TtlStateSpec toProto(StateTtl ttl) {
        return TtlStateSpec.newBuilder()
                .setStateId(ttl.stateId())
                .setTtlMillis(ttl.ttlMillis())
                .setLayout(
                        switch (ttl.layout()) {
                            case VALUE -> TtlLayout.TTL_VALUE;
                            case MAP_ENTRY -> TtlLayout.TTL_MAP_ENTRY;
                            case LIST -> TtlLayout.TTL_LIST;
                        })
                .setFixedElementBytes(ttl.fixedElementBytes())
                .build();
    }

    private static StateTtl toStateTtl(String table, TtlStateSpec spec) {
        StateTtl.Layout layout =
                switch (spec.getLayout()) {
                    case TTL_VALUE -> StateTtl.Layout.VALUE;
                    case TTL_MAP_ENTRY -> StateTtl.Layout.MAP_ENTRY;
                    case TTL_LIST -> StateTtl.Layout.LIST;
                    default ->
                            throw KvServerException.invalid(
                                    "RegisterTtlStates of table '"
                                            + table
                                            + "': state "
                                            + Integer.toHexString(spec.getStateId())
                                            + " has no TTL layout");
                };
        try {
            return new StateTtl(
                    spec.getStateId(), spec.getTtlMillis(), layout, spec.getFixedElementBytes());
        } catch (IllegalArgumentException e) {
            throw KvServerException.invalid(
                    "RegisterTtlStates of table '" + table + "': " + e.getMessage());
        }
    }

    @Override
    public void reportTtlTime(
            ReportTtlTimeRequest request, StreamObserver<ReportTtlTimeResponse> response) {
        respond(
                response,
                "ReportTtlTime",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    for (ShardRef ref : request.getShardsList()) {
                        ownedShard(table, ref.getShard())
                                .reportTtlTime(ref.getEpoch(), request.getTtlTimeMillis());
                    }
                    return ReportTtlTimeResponse.getDefaultInstance();
                });
    }

    // ---- filters

    /** Bytes of filter per message: far below any gRPC message limit, few messages per filter. */
    static final int FILTER_CHUNK_BYTES = 1 << 20;

    /**
     * Validates here, then takes the copy and streams it on the node's filter-fetch threads (at
     * most filter.max-concurrent-fetches copies exist at once), sending a chunk only when the
     * transport is ready for it, so a slow client costs one chunk of buffer, not the filter.
     */
    @Override
    public void fetchFilter(
            FetchFilterRequest request, StreamObserver<FetchFilterResponse> response) {
        ServerCallStreamObserver<FetchFilterResponse> call =
                (ServerCallStreamObserver<FetchFilterResponse>) response;
        FilterStream stream;
        try {
            if (shuttingDown) {
                throw KvServerException.shuttingDown();
            }
            Shard shard = ownedShard(table(request.getTable()), request.getShard().getShard());
            stream = new FilterStream(call, shard, request.getShard().getEpoch());
        } catch (KvServerException e) {
            LOG.debug("FetchFilter refused: {}", e.getMessage());
            call.onError(ErrorStatus.of(e));
            return;
        } catch (RuntimeException e) {
            LOG.error("FetchFilter failed unexpectedly", e);
            call.onError(
                    ErrorStatus.of(
                            ErrorCode.STORAGE_ERROR,
                            "FetchFilter failed on node " + cluster.selfAddress() + ": " + e));
            return;
        }
        try {
            storage.filterFetchExecutor().execute(stream);
        } catch (RejectedExecutionException e) {
            call.onError(ErrorStatus.of(KvServerException.shuttingDown()));
        }
    }

    /** One FetchFilter response stream, written by a filter-fetch thread. */
    private final class FilterStream implements Runnable {
        private final ServerCallStreamObserver<FetchFilterResponse> call;
        private final Shard shard;
        private final long epoch;
        private final PacedSender<FetchFilterResponse> out;

        FilterStream(ServerCallStreamObserver<FetchFilterResponse> call, Shard shard, long epoch) {
            this.call = call;
            this.shard = shard;
            this.epoch = epoch;
            this.out = new PacedSender<>(call);
        }

        @Override
        public void run() {
            if (call.isCancelled()) {
                return;
            }
            FilterCopy copy;
            try {
                copy = shard.copyFilter(epoch);
            } catch (KvServerException e) {
                if (e.code() == ErrorCode.STORAGE_ERROR) {
                    LOG.error("FetchFilter failed: {}", e.getMessage(), e);
                } else {
                    LOG.debug("FetchFilter refused: {}", e.getMessage());
                }
                call.onError(ErrorStatus.of(e));
                return;
            } catch (RuntimeException e) {
                LOG.error("FetchFilter of {} failed unexpectedly", shard, e);
                call.onError(
                        ErrorStatus.of(
                                ErrorCode.STORAGE_ERROR,
                                "FetchFilter of " + shard + " failed: " + e));
                return;
            }
            try (copy) {
                send(
                        FetchFilterResponse.newBuilder()
                                .setHeader(
                                        FilterHeader.newBuilder()
                                                .setVersion(copy.version())
                                                .setSerializedBytes(copy.serializedFilterBytes()))
                                .build());
                ChunkOutput out = new ChunkOutput();
                copy.writeFilterTo(out);
                out.sendRest();
                call.onCompleted();
            } catch (ClientGone e) {
                LOG.debug("FetchFilter of {} cancelled by the client", shard);
            } catch (IOException | RuntimeException e) {
                LOG.error("FetchFilter of {} failed while sending", shard, e);
                call.onError(
                        ErrorStatus.of(
                                ErrorCode.STORAGE_ERROR,
                                "FetchFilter of " + shard + " failed while sending: " + e));
            }
        }

        private void send(FetchFilterResponse message) throws ClientGone {
            out.send(message);
        }

        /** Cuts the filter's bytes into chunks; each buffer is sent as is, never reused. */
        private final class ChunkOutput extends OutputStream {
            private byte[] buffer = new byte[FILTER_CHUNK_BYTES];
            private int filled;

            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int offset, int length) throws IOException {
                while (length > 0) {
                    int n = Math.min(length, buffer.length - filled);
                    System.arraycopy(b, offset, buffer, filled, n);
                    filled += n;
                    offset += n;
                    length -= n;
                    if (filled == buffer.length) {
                        sendRest();
                    }
                }
            }

            void sendRest() throws ClientGone {
                if (filled == 0) {
                    return;
                }
                byte[] full = buffer;
                int n = filled;
                buffer = new byte[FILTER_CHUNK_BYTES];
                filled = 0;
                send(
                        FetchFilterResponse.newBuilder()
                                .setChunk(UnsafeByteOperations.unsafeWrap(full, 0, n))
                                .build());
            }
        }
    }

    /** The client cancelled the stream or its deadline passed. */
    /**
     * Sends a server stream's messages from a thread of its own at the pace the client takes them
     * (waits while the call is not ready), so a slow reader holds back only its own stream and no
     * more than one message is buffered for it. Made while the call is being started: gRPC takes
     * its ready and cancel handlers only then.
     */
    private static final class PacedSender<T> {
        private final ServerCallStreamObserver<T> call;
        private final Object readiness = new Object();

        PacedSender(ServerCallStreamObserver<T> call) {
            this.call = call;
            call.setOnReadyHandler(this::wakeUp);
            call.setOnCancelHandler(this::wakeUp);
        }

        private void wakeUp() {
            synchronized (readiness) {
                readiness.notifyAll();
            }
        }

        void send(T message) throws ClientGone {
            synchronized (readiness) {
                while (!call.isReady()) {
                    if (call.isCancelled()) {
                        throw new ClientGone();
                    }
                    try {
                        // Woken by onReady or onCancel; the timeout only guards a lost wake-up.
                        readiness.wait(100);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new ClientGone();
                    }
                }
            }
            call.onNext(message);
        }
    }

    private static final class ClientGone extends IOException {
        private static final long serialVersionUID = 1L;

        ClientGone() {
            super("the client is gone");
        }
    }

    @Override
    public void describeShards(
            DescribeShardsRequest request, StreamObserver<DescribeShardsResponse> response) {
        respond(
                response,
                "DescribeShards",
                true,
                () -> {
                    TableStore table = table(request.getTable());
                    DescribeShardsResponse.Builder b = DescribeShardsResponse.newBuilder();
                    for (int s : ownedExistingShards(table)) {
                        Shard shard = table.shard(s);
                        b.addShards(
                                ShardStatus.newBuilder()
                                        .setShard(s)
                                        .setEpoch(shard.epoch())
                                        .setOpen(shard.isOpen())
                                        .setFilter(toProto(shard.filterStatus()))
                                        .setLastActiveMillis(shard.lastActiveMillis()));
                    }
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
                        expiry.addStates(toProto(ttl));
                    }
                    return b.setExpiry(expiry).build();
                });
    }

    private static io.taishan.kv.proto.FilterStatus toProto(FilterStatus f) {
        FilterState state =
                switch (f.state()) {
                    case AVAILABLE -> FilterState.FILTER_STATE_AVAILABLE;
                    case REBUILDING -> FilterState.FILTER_STATE_REBUILDING;
                    case UNAVAILABLE -> FilterState.FILTER_STATE_UNAVAILABLE;
                    case SAVED -> FilterState.FILTER_STATE_SAVED;
                    case EMPTY -> FilterState.FILTER_STATE_EMPTY;
                    case MISSING -> FilterState.FILTER_STATE_MISSING;
                };
        return io.taishan.kv.proto.FilterStatus.newBuilder()
                .setState(state)
                .setVersion(f.version())
                .setMemoryBytes(f.memoryBytes())
                .setSavedBytes(f.savedBytes())
                .setEstimatedFpp(f.estimatedFpp())
                .setRebuildRunning(f.rebuildRunning())
                .setRebuildQueued(f.rebuildQueued())
                .setRebuildKeysScanned(f.rebuildKeysScanned())
                .setKeysAtBuild(f.keysAtBuild())
                .setReason(f.reason())
                .build();
    }

    // ---- helpers

    private TableStore table(String name) {
        TableMeta.checkName(name);
        return storage.tableStore(name);
    }

    private Shard ownedShard(TableStore table, int shard) {
        if (shard < 0) {
            throw KvServerException.invalid(
                    "negative shard " + shard + " for table '" + table.name() + "'");
        }
        table.checkShard(shard);
        cluster.checkOwned(table.name(), shard, table.shardCount());
        return table.shard(shard);
    }

    private List<Integer> ownedExistingShards(TableStore table) {
        List<Integer> owned = new ArrayList<>();
        for (int s : table.existingShards()) {
            if (cluster.owns(s, table.shardCount())) {
                owned.add(s);
            }
        }
        return owned;
    }

    private static void checkSnapshotId(long snapshotId, String where) {
        if (snapshotId < 0) {
            throw KvServerException.invalid(where + ": negative snapshot id " + snapshotId);
        }
    }

    private static TableInfo toProto(TableMeta t) {
        return TableInfo.newBuilder()
                .setName(t.name())
                .setShardCount(t.shardCount())
                .setCreatedAtMillis(t.createdAtMillis())
                .build();
    }

    private static SnapshotInfo toProto(String table, int shard, SnapshotMeta m) {
        return SnapshotInfo.newBuilder()
                .setTable(table)
                .setShard(shard)
                .setSnapshotId(m.snapshotId())
                .setPinned(m.pinned())
                .setCreatedAtMillis(m.createdAtMillis())
                .setSizeBytes(m.sizeBytes())
                .setFileCount(m.fileCount())
                .setReused(m.reused())
                .build();
    }

    /** A call that may run on a network thread, where it must not wait. */
    private interface InlineCall<T> {
        /**
         * @param inline whether on a network thread
         * @return the answer, or null (only when {@code inline}) if it would have to wait
         */
        @Nullable
        T run(boolean inline);
    }

    /**
     * Runs {@code call} here, on the network thread; if it answers null, runs it again on the call
     * pool, where waiting holds up no other call. Reads only: they may run twice.
     */
    private <T> void respondInline(StreamObserver<T> observer, String method, InlineCall<T> call) {
        T result;
        try {
            if (shuttingDown) {
                throw KvServerException.shuttingDown();
            }
            result = call.run(true);
        } catch (RuntimeException e) {
            fail(observer, method, e);
            return;
        }
        if (result != null) {
            observer.onNext(result);
            observer.onCompleted();
            return;
        }
        try {
            calls.pool().execute(() -> respond(observer, method, true, () -> call.run(false)));
        } catch (RejectedExecutionException e) {
            observer.onError(ErrorStatus.of(KvServerException.shuttingDown()));
        }
    }

    private <T> void respond(
            StreamObserver<T> observer,
            String method,
            boolean refuseWhenShuttingDown,
            Supplier<T> call) {
        T result;
        try {
            if (refuseWhenShuttingDown && shuttingDown) {
                throw KvServerException.shuttingDown();
            }
            result = call.get();
        } catch (RuntimeException e) {
            fail(observer, method, e);
            return;
        }
        observer.onNext(result);
        observer.onCompleted();
    }

    private void fail(StreamObserver<?> observer, String method, RuntimeException failure) {
        if (failure instanceof KvServerException e) {
            if (e.code() == ErrorCode.STORAGE_ERROR) {
                LOG.error("{} failed: {}", method, e.getMessage(), e);
            } else {
                LOG.debug("{} refused: {}", method, e.getMessage());
            }
            observer.onError(ErrorStatus.of(e));
            return;
        }
        LOG.error("{} failed unexpectedly", method, failure);
        observer.onError(
                ErrorStatus.of(
                        ErrorCode.STORAGE_ERROR,
                        method + " failed on node " + cluster.selfAddress() + ": " + failure));
    }
}
