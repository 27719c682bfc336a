package io.taishan.kv.client;

import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.taishan.bloom.BloomFilter;
import io.taishan.bloom.KeyHash;
import io.taishan.kv.proto.CloneRequest;
import io.taishan.kv.proto.CloneResponse;
import io.taishan.kv.proto.ClusterInfoRequest;
import io.taishan.kv.proto.ClusterInfoResponse;
import io.taishan.kv.proto.ClusterMember;
import io.taishan.kv.proto.CreateTableRequest;
import io.taishan.kv.proto.CreateTableResponse;
import io.taishan.kv.proto.DescribeTableRequest;
import io.taishan.kv.proto.DescribeTableResponse;
import io.taishan.kv.proto.DropSnapshotRequest;
import io.taishan.kv.proto.DropSnapshotResponse;
import io.taishan.kv.proto.DropSnapshotsBelowRequest;
import io.taishan.kv.proto.DropSnapshotsBelowResponse;
import io.taishan.kv.proto.DropTableRequest;
import io.taishan.kv.proto.DropTableResponse;
import io.taishan.kv.proto.DurableFile;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.FetchFilterRequest;
import io.taishan.kv.proto.FetchFilterResponse;
import io.taishan.kv.proto.FilterHeader;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.GetResponse;
import io.taishan.kv.proto.HealthRequest;
import io.taishan.kv.proto.HealthResponse;
import io.taishan.kv.proto.KeyRef;
import io.taishan.kv.proto.KeyValue;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.Limits;
import io.taishan.kv.proto.ListSnapshotsRequest;
import io.taishan.kv.proto.ListSnapshotsResponse;
import io.taishan.kv.proto.ListTablesRequest;
import io.taishan.kv.proto.ListTablesResponse;
import io.taishan.kv.proto.MultiGetRequest;
import io.taishan.kv.proto.MultiGetResponse;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.proto.OpenShardResponse;
import io.taishan.kv.proto.RestoreRequest;
import io.taishan.kv.proto.RestoreResponse;
import io.taishan.kv.proto.ScanRequest;
import io.taishan.kv.proto.ScanResponse;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.ShardWriteResult;
import io.taishan.kv.proto.SnapshotInfo;
import io.taishan.kv.proto.SnapshotRequest;
import io.taishan.kv.proto.SnapshotResponse;
import io.taishan.kv.proto.TableInfo;
import io.taishan.kv.proto.UploadSnapshotRequest;
import io.taishan.kv.proto.UploadSnapshotResponse;
import io.taishan.kv.proto.ValueResult;
import io.taishan.kv.proto.WriteOp;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.proto.WriteResponse;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.KvErrors;
import io.taishan.kv.protocol.ShardPlacement;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import javax.annotation.Nullable;

/**
 * A small in-memory KV service for the client's tests, speaking the real protocol over real gRPC:
 * tables, epochs with fencing, shard ownership by {@link ClusterView}, data, paged scans, snapshot
 * bookkeeping (no data copies), each shard's Bloom filter built from its keys at fetch time. Faults
 * can be scripted per RPC (fail the next N calls with a status and error-code trailer; hold calls
 * until a latch opens), and every call is counted and its request kept.
 */
public final class ScriptedKvService extends KvServiceGrpc.KvServiceImplBase {
    private static final Comparator<ByteString> UNSIGNED =
            ByteString.unsignedLexicographicalComparator();

    private final Limits limits;
    private final int defaultScanPage;
    @Nullable private volatile ClusterView view;
    private volatile int selfIndex;

    private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    private final Map<String, List<Message>> requests = new ConcurrentHashMap<>();
    private final Map<String, Deque<StatusRuntimeException>> faults = new ConcurrentHashMap<>();
    private final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();
    private final Deque<Integer> filterStreamBreaks = new ArrayDeque<>();
    private volatile long filterVersion;
    private volatile int filterChunkBytes = 512;
    private volatile long filterSizeSkew;

    // Guarded by this.
    private final Map<String, TableInfo> tables = new TreeMap<>();
    private final Map<String, Long> epochs = new HashMap<>();
    private final Map<String, NavigableMap<ByteString, ByteString>> data = new HashMap<>();
    private final Map<String, NavigableMap<Long, SnapshotInfo>> snapshots = new HashMap<>();

    public ScriptedKvService(Limits limits, int defaultScanPage) {
        this.limits = limits;
        this.defaultScanPage = defaultScanPage;
    }

    public static Limits generousLimits() {
        return Limits.newBuilder()
                .setMaxKeyBytes(1024)
                .setMaxValueBytes(1 << 20)
                .setMaxRequestBytes(4 << 20)
                .setMaxOpsPerRequest(10_000)
                .setMaxScanPageEntries(1000)
                .setMaxScanPageBytes(1 << 20)
                .build();
    }

    /** Nodes named {@code n0, n1, ...} (name order = list order) at these addresses. */
    public void setCluster(List<String> addresses, int selfIndex) {
        List<ClusterNode> nodes = new ArrayList<>();
        for (int i = 0; i < addresses.size(); i++) {
            nodes.add(new ClusterNode(nameOf(i), addresses.get(i)));
        }
        setCluster(ClusterView.of(nodes), nameOf(selfIndex));
    }

    public void setCluster(ClusterView view, String selfName) {
        this.view = view;
        this.selfIndex = view.indexOf(selfName);
    }

    /** The name {@link ScriptedCluster} gives its node {@code i}. */
    public static String nameOf(int i) {
        return "n" + i;
    }

    /** The next {@code count} calls of {@code method} fail with {@code status} (and the code). */
    public void failNext(String method, int count, Status.Code status, ErrorCode code) {
        Deque<StatusRuntimeException> queue =
                faults.computeIfAbsent(method, m -> new ArrayDeque<>());
        synchronized (queue) {
            for (int i = 0; i < count; i++) {
                queue.add(error(status, code, "scripted failure of " + method));
            }
        }
    }

    /** Calls of {@code method} wait until the returned latch is counted down. */
    public CountDownLatch hold(String method) {
        CountDownLatch gate = new CountDownLatch(1);
        gates.put(method, gate);
        return gate;
    }

    /** The filter version reported by writes and fetches. */
    public void setFilterVersion(long version) {
        this.filterVersion = version;
    }

    /** The most bytes one FetchFilter chunk carries. */
    public void setFilterChunkBytes(int bytes) {
        this.filterChunkBytes = bytes;
    }

    /** FetchFilter headers announce this many bytes more than the filter has (a broken server). */
    public void setFilterSizeSkew(long bytes) {
        this.filterSizeSkew = bytes;
    }

    /**
     * The next {@code count} FetchFilter streams send their header and {@code chunks} chunks, then
     * fail with UNAVAILABLE: a connection lost half-way.
     */
    public void breakNextFilterStreams(int count, int chunks) {
        synchronized (filterStreamBreaks) {
            for (int i = 0; i < count; i++) {
                filterStreamBreaks.add(chunks);
            }
        }
    }

    public void releaseAll() {
        gates.values().forEach(CountDownLatch::countDown);
    }

    public int calls(String method) {
        AtomicInteger count = calls.get(method);
        return count == null ? 0 : count.get();
    }

    @SuppressWarnings("unchecked")
    public <T extends Message> List<T> requests(String method) {
        return (List<T>) List.copyOf(requests.getOrDefault(method, List.of()));
    }

    public static StatusRuntimeException error(Status.Code status, ErrorCode code, String message) {
        Metadata trailers = new Metadata();
        if (code != ErrorCode.ERROR_CODE_UNSPECIFIED) {
            trailers.put(KvErrors.ERROR_CODE_KEY, code.name());
        }
        return Status.fromCode(status).withDescription(message).asRuntimeException(trailers);
    }

    private <T> void serve(
            String method, Message request, StreamObserver<T> observer, Supplier<T> answer) {
        calls.computeIfAbsent(method, m -> new AtomicInteger()).incrementAndGet();
        requests.computeIfAbsent(method, m -> new CopyOnWriteArrayList<>()).add(request);
        try {
            CountDownLatch gate = gates.get(method);
            if (gate != null) {
                gate.await();
            }
            Deque<StatusRuntimeException> queue = faults.get(method);
            if (queue != null) {
                StatusRuntimeException fault;
                synchronized (queue) {
                    fault = queue.poll();
                }
                if (fault != null) {
                    throw fault;
                }
            }
            T response;
            synchronized (this) {
                response = answer.get();
            }
            observer.onNext(response);
            observer.onCompleted();
        } catch (StatusRuntimeException e) {
            observer.onError(e);
        } catch (InterruptedException e) {
            observer.onError(Status.CANCELLED.asRuntimeException());
        }
    }

    // ---- cluster

    @Override
    public void health(HealthRequest request, StreamObserver<HealthResponse> observer) {
        serve(
                "Health",
                request,
                observer,
                () ->
                        HealthResponse.newBuilder()
                                .setStatus("SERVING")
                                .setNodeAddress(view.node(selfIndex).address())
                                .setNodeName(view.node(selfIndex).name())
                                .setNodeIndex(selfIndex)
                                .setTables(tables.size())
                                .setVersion("scripted")
                                .build());
    }

    @Override
    public void clusterInfo(
            ClusterInfoRequest request, StreamObserver<ClusterInfoResponse> observer) {
        serve(
                "ClusterInfo",
                request,
                observer,
                () -> {
                    ClusterView v = view;
                    ClusterInfoResponse.Builder b =
                            ClusterInfoResponse.newBuilder()
                                    .setSelfIndex(selfIndex)
                                    .setLimits(limits)
                                    .setViewFingerprint(v.fingerprint())
                                    .setPlacement(ShardPlacement.VERSION);
                    for (ClusterNode node : v.nodes()) {
                        b.addNodes(node.address());
                        b.addMembers(
                                ClusterMember.newBuilder()
                                        .setName(node.name())
                                        .setAddress(node.address()));
                    }
                    return b.build();
                });
    }

    // ---- tables

    @Override
    public void createTable(
            CreateTableRequest request, StreamObserver<CreateTableResponse> observer) {
        serve(
                "CreateTable",
                request,
                observer,
                () -> {
                    TableInfo existing = tables.get(request.getName());
                    if (existing != null) {
                        if (request.getIfNotExists()
                                && existing.getShardCount() == request.getShardCount()) {
                            return CreateTableResponse.newBuilder().setTable(existing).build();
                        }
                        throw error(
                                Status.Code.ALREADY_EXISTS,
                                ErrorCode.TABLE_EXISTS,
                                "table " + request.getName() + " exists");
                    }
                    TableInfo created =
                            TableInfo.newBuilder()
                                    .setName(request.getName())
                                    .setShardCount(request.getShardCount())
                                    .setCreatedAtMillis(1)
                                    .build();
                    tables.put(request.getName(), created);
                    return CreateTableResponse.newBuilder()
                            .setTable(created)
                            .setCreated(true)
                            .build();
                });
    }

    @Override
    public void describeTable(
            DescribeTableRequest request, StreamObserver<DescribeTableResponse> observer) {
        serve(
                "DescribeTable",
                request,
                observer,
                () ->
                        DescribeTableResponse.newBuilder()
                                .setTable(table(request.getName()))
                                .build());
    }

    @Override
    public void listTables(ListTablesRequest request, StreamObserver<ListTablesResponse> observer) {
        serve(
                "ListTables",
                request,
                observer,
                () -> ListTablesResponse.newBuilder().addAllTables(tables.values()).build());
    }

    @Override
    public void dropTable(DropTableRequest request, StreamObserver<DropTableResponse> observer) {
        serve(
                "DropTable",
                request,
                observer,
                () -> {
                    table(request.getName());
                    tables.remove(request.getName());
                    String prefix = request.getName() + "/";
                    epochs.keySet().removeIf(k -> k.startsWith(prefix));
                    data.keySet().removeIf(k -> k.startsWith(prefix));
                    snapshots.keySet().removeIf(k -> k.startsWith(prefix));
                    return DropTableResponse.getDefaultInstance();
                });
    }

    // ---- ownership

    @Override
    public void openShard(OpenShardRequest request, StreamObserver<OpenShardResponse> observer) {
        serve(
                "OpenShard",
                request,
                observer,
                () ->
                        OpenShardResponse.newBuilder()
                                .setEpoch(newEpoch(request.getTable(), request.getShard()))
                                .build());
    }

    // ---- data

    @Override
    public void get(GetRequest request, StreamObserver<GetResponse> observer) {
        serve(
                "Get",
                request,
                observer,
                () -> {
                    ByteString value =
                            shardData(request.getTable(), request.getShard()).get(request.getKey());
                    return value == null
                            ? GetResponse.getDefaultInstance()
                            : GetResponse.newBuilder().setFound(true).setValue(value).build();
                });
    }

    @Override
    public void multiGet(MultiGetRequest request, StreamObserver<MultiGetResponse> observer) {
        serve(
                "MultiGet",
                request,
                observer,
                () -> {
                    MultiGetResponse.Builder response = MultiGetResponse.newBuilder();
                    for (KeyRef key : request.getKeysList()) {
                        ByteString value =
                                shardData(request.getTable(), key.getShard()).get(key.getKey());
                        response.addValues(
                                value == null
                                        ? ValueResult.getDefaultInstance()
                                        : ValueResult.newBuilder()
                                                .setFound(true)
                                                .setValue(value)
                                                .build());
                    }
                    return response.build();
                });
    }

    @Override
    public void scan(ScanRequest request, StreamObserver<ScanResponse> observer) {
        serve(
                "Scan",
                request,
                observer,
                () -> {
                    NavigableMap<ByteString, ByteString> shard =
                            shardData(request.getTable(), request.getShard());
                    NavigableMap<ByteString, ByteString> range =
                            request.getEndKey().isEmpty()
                                    ? shard.tailMap(request.getStartKey(), true)
                                    : shard.subMap(
                                            request.getStartKey(),
                                            true,
                                            request.getEndKey(),
                                            false);
                    int page = request.getLimit() > 0 ? request.getLimit() : defaultScanPage;
                    ScanResponse.Builder response = ScanResponse.newBuilder();
                    for (Map.Entry<ByteString, ByteString> e : range.entrySet()) {
                        if (response.getEntriesCount() == page) {
                            return response.setHasMore(true).setNextStartKey(e.getKey()).build();
                        }
                        response.addEntries(
                                KeyValue.newBuilder()
                                        .setKey(e.getKey())
                                        .setValue(
                                                request.getKeysOnly()
                                                        ? ByteString.EMPTY
                                                        : e.getValue()));
                    }
                    return response.build();
                });
    }

    @Override
    public void write(WriteRequest request, StreamObserver<WriteResponse> observer) {
        serve(
                "Write",
                request,
                observer,
                () -> {
                    // Check every shard before touching any, as the real server must.
                    for (ShardWrite shardWrite : request.getShardsList()) {
                        shardData(
                                request.getTable(),
                                ShardRef.newBuilder()
                                        .setShard(shardWrite.getShard())
                                        .setEpoch(shardWrite.getEpoch())
                                        .build());
                    }
                    WriteResponse.Builder response = WriteResponse.newBuilder();
                    for (ShardWrite shardWrite : request.getShardsList()) {
                        response.addResults(apply(request.getTable(), shardWrite));
                    }
                    return response.build();
                });
    }

    private ShardWriteResult apply(String table, ShardWrite shardWrite) {
        String key = key(table, shardWrite.getShard());
        NavigableMap<ByteString, ByteString> shard = data.get(key);
        ShardWriteResult.Builder result =
                ShardWriteResult.newBuilder()
                        .setShard(shardWrite.getShard())
                        .setFilterVersion(filterVersion);
        for (WriteOp op : shardWrite.getOpsList()) {
            switch (op.getOpCase()) {
                case PUT:
                    shard.put(op.getPut().getKey(), op.getPut().getValue());
                    break;
                case DELETE:
                    shard.remove(op.getDelete().getKey());
                    break;
                case DELETE_RANGE:
                    shard.subMap(
                                    op.getDeleteRange().getBeginKey(),
                                    true,
                                    op.getDeleteRange().getEndKey(),
                                    false)
                            .clear();
                    break;
                case APPEND:
                    ByteString old = shard.get(op.getAppend().getKey());
                    shard.put(
                            op.getAppend().getKey(),
                            old == null
                                    ? op.getAppend().getValue()
                                    : old.concat(ByteString.copyFromUtf8(","))
                                            .concat(op.getAppend().getValue()));
                    break;
                case SNAPSHOT:
                    result.addSnapshots(
                            takeSnapshot(
                                    table,
                                    shardWrite.getShard(),
                                    op.getSnapshot().getSnapshotId(),
                                    op.getSnapshot().getPinned()));
                    break;
                default:
                    throw error(Status.Code.INVALID_ARGUMENT, ErrorCode.INVALID_ARGUMENT, "no op");
            }
        }
        return result.build();
    }

    // ---- snapshots

    @Override
    public void snapshot(SnapshotRequest request, StreamObserver<SnapshotResponse> observer) {
        serve(
                "Snapshot",
                request,
                observer,
                () -> {
                    SnapshotResponse.Builder response = SnapshotResponse.newBuilder();
                    for (ShardRef shard : request.getShardsList()) {
                        shardData(request.getTable(), shard);
                        response.addSnapshots(
                                takeSnapshot(
                                        request.getTable(),
                                        shard.getShard(),
                                        request.getSnapshotId(),
                                        request.getPinned()));
                    }
                    return response.build();
                });
    }

    /**
     * Copies nothing: answers with one cut of the request's shards whose one file is named after
     * this node under the shared directory, as if just written.
     */
    @Override
    public void uploadSnapshot(
            UploadSnapshotRequest request, StreamObserver<UploadSnapshotResponse> observer) {
        serve(
                "UploadSnapshot",
                request,
                observer,
                () -> {
                    String node = nameOf(selfIndex);
                    DurableFile file =
                            DurableFile.newBuilder()
                                    .setName("000001.sst")
                                    .setPath(request.getSharedDir() + "/" + node + "-000001.sst")
                                    .setSizeBytes(100)
                                    .build();
                    DurableFile pack =
                            DurableFile.newBuilder()
                                    .setPath(request.getExclusiveDir() + "/" + node + "-meta")
                                    .setSizeBytes(10)
                                    .build();
                    return UploadSnapshotResponse.newBuilder()
                            .addCuts(
                                    io.taishan.kv.proto.DurableCut.newBuilder()
                                            .setCutId("cut-of-" + node)
                                            .addAllShards(request.getShardsList())
                                            .addFiles(file)
                                            .setMetadataPack(pack))
                            .setUploadedBytes(110)
                            .build();
                });
    }

    @Override
    public void restore(RestoreRequest request, StreamObserver<RestoreResponse> observer) {
        serve(
                "Restore",
                request,
                observer,
                () -> {
                    snapshotOf(request.getTable(), request.getShard(), request.getSnapshotId());
                    return RestoreResponse.newBuilder()
                            .setEpoch(newEpoch(request.getTable(), request.getShard()))
                            .build();
                });
    }

    @Override
    public void clone(CloneRequest request, StreamObserver<CloneResponse> observer) {
        serve(
                "Clone",
                request,
                observer,
                () -> {
                    snapshotOf(
                            request.getSourceTable(), request.getShard(), request.getSnapshotId());
                    return CloneResponse.newBuilder()
                            .setEpoch(newEpoch(request.getTargetTable(), request.getShard()))
                            .build();
                });
    }

    @Override
    public void listSnapshots(
            ListSnapshotsRequest request, StreamObserver<ListSnapshotsResponse> observer) {
        serve(
                "ListSnapshots",
                request,
                observer,
                () -> {
                    table(request.getTable());
                    ListSnapshotsResponse.Builder response = ListSnapshotsResponse.newBuilder();
                    for (NavigableMap<Long, SnapshotInfo> shard : snapshotsOf(request.getTable())) {
                        for (SnapshotInfo s : shard.values()) {
                            if (!request.hasShard() || s.getShard() == request.getShard()) {
                                response.addSnapshots(s);
                            }
                        }
                    }
                    return response.build();
                });
    }

    @Override
    public void dropSnapshot(
            DropSnapshotRequest request, StreamObserver<DropSnapshotResponse> observer) {
        serve(
                "DropSnapshot",
                request,
                observer,
                () -> {
                    table(request.getTable());
                    NavigableMap<Long, SnapshotInfo> shard =
                            snapshots.get(key(request.getTable(), request.getShard()));
                    boolean dropped =
                            shard != null && shard.remove(request.getSnapshotId()) != null;
                    return DropSnapshotResponse.newBuilder().setDropped(dropped).build();
                });
    }

    @Override
    public void dropSnapshotsBelow(
            DropSnapshotsBelowRequest request,
            StreamObserver<DropSnapshotsBelowResponse> observer) {
        serve(
                "DropSnapshotsBelow",
                request,
                observer,
                () -> {
                    table(request.getTable());
                    int dropped = 0;
                    for (NavigableMap<Long, SnapshotInfo> shard : snapshotsOf(request.getTable())) {
                        var below =
                                shard.headMap(request.getSnapshotId(), false).values().iterator();
                        while (below.hasNext()) {
                            if (!below.next().getPinned()) {
                                below.remove();
                                dropped++;
                            }
                        }
                    }
                    return DropSnapshotsBelowResponse.newBuilder().setDropped(dropped).build();
                });
    }

    // ---- filters

    @Override
    public void fetchFilter(
            FetchFilterRequest request, StreamObserver<FetchFilterResponse> observer) {
        Integer breakAfter;
        synchronized (filterStreamBreaks) {
            breakAfter = filterStreamBreaks.poll();
        }
        serve(
                "FetchFilter",
                request,
                new StreamObserver<List<FetchFilterResponse>>() {
                    private boolean broken;

                    @Override
                    public void onNext(List<FetchFilterResponse> messages) {
                        for (int i = 0; i < messages.size(); i++) {
                            if (breakAfter != null && i == breakAfter + 1) {
                                broken = true;
                                observer.onError(
                                        error(
                                                Status.Code.UNAVAILABLE,
                                                ErrorCode.ERROR_CODE_UNSPECIFIED,
                                                "scripted break of a filter stream"));
                                return;
                            }
                            observer.onNext(messages.get(i));
                        }
                    }

                    @Override
                    public void onError(Throwable t) {
                        observer.onError(t);
                    }

                    @Override
                    public void onCompleted() {
                        if (!broken) {
                            observer.onCompleted();
                        }
                    }
                },
                () -> {
                    NavigableMap<ByteString, ByteString> shard =
                            shardData(request.getTable(), request.getShard());
                    byte[] bytes;
                    try (BloomFilter filter =
                            BloomFilter.create(Math.max(1000, shard.size()), 0.01)) {
                        for (ByteString key : shard.keySet()) {
                            filter.put(KeyHash.hash(key.toByteArray()));
                        }
                        bytes = filter.toByteArray();
                    }
                    List<FetchFilterResponse> messages = new ArrayList<>();
                    messages.add(
                            FetchFilterResponse.newBuilder()
                                    .setHeader(
                                            FilterHeader.newBuilder()
                                                    .setVersion(filterVersion)
                                                    .setSerializedBytes(
                                                            bytes.length + filterSizeSkew))
                                    .build());
                    int chunk = filterChunkBytes;
                    for (int offset = 0; offset < bytes.length; offset += chunk) {
                        messages.add(
                                FetchFilterResponse.newBuilder()
                                        .setChunk(
                                                ByteString.copyFrom(
                                                        bytes,
                                                        offset,
                                                        Math.min(chunk, bytes.length - offset)))
                                        .build());
                    }
                    return messages;
                });
    }

    // ---- state (callers hold this)

    private TableInfo table(String name) {
        TableInfo table = tables.get(name);
        if (table == null) {
            throw error(Status.Code.NOT_FOUND, ErrorCode.TABLE_NOT_FOUND, "no table " + name);
        }
        return table;
    }

    private void checkOwned(String tableName, int shard) {
        TableInfo table = table(tableName);
        if (shard >= table.getShardCount()) {
            throw error(
                    Status.Code.OUT_OF_RANGE,
                    ErrorCode.SHARD_OUT_OF_RANGE,
                    "shard " + shard + " of " + table.getShardCount());
        }
        ClusterView v = view;
        if (v.ownerOf(shard, table.getShardCount()) != selfIndex) {
            StatusRuntimeException e =
                    error(
                            Status.Code.FAILED_PRECONDITION,
                            ErrorCode.SHARD_NOT_OWNED,
                            "shard " + shard + " is not owned by " + v.node(selfIndex).name());
            e.getTrailers().put(KvErrors.CLUSTER_VIEW_KEY, v.fingerprintHex());
            throw e;
        }
    }

    private long newEpoch(String table, int shard) {
        checkOwned(table, shard);
        return epochs.merge(key(table, shard), 1L, Long::sum);
    }

    private NavigableMap<ByteString, ByteString> shardData(String table, ShardRef ref) {
        checkOwned(table, ref.getShard());
        String key = key(table, ref.getShard());
        long current = epochs.getOrDefault(key, 0L);
        if (ref.getEpoch() != current) {
            throw error(
                    Status.Code.FAILED_PRECONDITION,
                    ErrorCode.FENCED,
                    "epoch " + ref.getEpoch() + " is not the current " + current);
        }
        return data.computeIfAbsent(key, k -> new TreeMap<>(UNSIGNED));
    }

    private SnapshotInfo takeSnapshot(String table, int shard, long id, boolean pinned) {
        return snapshots
                .computeIfAbsent(key(table, shard), k -> new TreeMap<>())
                .computeIfAbsent(
                        id,
                        i ->
                                SnapshotInfo.newBuilder()
                                        .setTable(table)
                                        .setShard(shard)
                                        .setSnapshotId(id)
                                        .setPinned(pinned)
                                        .build());
    }

    private SnapshotInfo snapshotOf(String table, int shard, long id) {
        checkOwned(table, shard);
        NavigableMap<Long, SnapshotInfo> shardSnapshots = snapshots.get(key(table, shard));
        SnapshotInfo snapshot = shardSnapshots == null ? null : shardSnapshots.get(id);
        if (snapshot == null) {
            throw error(
                    Status.Code.NOT_FOUND,
                    ErrorCode.SNAPSHOT_NOT_FOUND,
                    "no snapshot " + id + " of " + table + "/" + shard);
        }
        return snapshot;
    }

    private List<NavigableMap<Long, SnapshotInfo>> snapshotsOf(String table) {
        List<NavigableMap<Long, SnapshotInfo>> result = new ArrayList<>();
        snapshots.forEach(
                (key, value) -> {
                    if (key.startsWith(table + "/")) {
                        result.add(value);
                    }
                });
        return result;
    }

    private static String key(String table, int shard) {
        return table + "/" + shard;
    }
}
