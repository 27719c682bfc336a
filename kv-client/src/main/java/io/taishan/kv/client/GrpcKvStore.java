package io.taishan.kv.client;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.grpc.Context;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.taishan.bloom.BloomFilter;
import io.taishan.kv.proto.CloneRequest;
import io.taishan.kv.proto.CreateTableRequest;
import io.taishan.kv.proto.DescribeShardsRequest;
import io.taishan.kv.proto.DescribeShardsResponse;
import io.taishan.kv.proto.DescribeTableRequest;
import io.taishan.kv.proto.DropShardSnapshotsRequest;
import io.taishan.kv.proto.DropShardSnapshotsResponse;
import io.taishan.kv.proto.DropSnapshotRequest;
import io.taishan.kv.proto.DropSnapshotsBelowRequest;
import io.taishan.kv.proto.DropTableRequest;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.FetchFilterRequest;
import io.taishan.kv.proto.FetchFilterResponse;
import io.taishan.kv.proto.FetchFiltersRequest;
import io.taishan.kv.proto.FilterHeader;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.GetResponse;
import io.taishan.kv.proto.HealthRequest;
import io.taishan.kv.proto.HealthResponse;
import io.taishan.kv.proto.KeyRef;
import io.taishan.kv.proto.KeyValue;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.KvServiceGrpc.KvServiceBlockingStub;
import io.taishan.kv.proto.KvServiceGrpc.KvServiceFutureStub;
import io.taishan.kv.proto.ListSnapshotsRequest;
import io.taishan.kv.proto.ListSnapshotsResponse;
import io.taishan.kv.proto.ListTablesRequest;
import io.taishan.kv.proto.ListTablesResponse;
import io.taishan.kv.proto.MultiGetRequest;
import io.taishan.kv.proto.MultiGetResponse;
import io.taishan.kv.proto.MultiScanRequest;
import io.taishan.kv.proto.MultiScanResponse;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.proto.OpenShardsRequest;
import io.taishan.kv.proto.OpenShardsResponse;
import io.taishan.kv.proto.RegisterTtlStatesRequest;
import io.taishan.kv.proto.ReportTtlTimeRequest;
import io.taishan.kv.proto.ReportTtlTimeResponse;
import io.taishan.kv.proto.RestoreRequest;
import io.taishan.kv.proto.RestoreShardsRequest;
import io.taishan.kv.proto.RestoreShardsResponse;
import io.taishan.kv.proto.ScanRequest;
import io.taishan.kv.proto.ScanResponse;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.ShardRefusal;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.ShardWriteResult;
import io.taishan.kv.proto.SnapshotRequest;
import io.taishan.kv.proto.SnapshotResponse;
import io.taishan.kv.proto.TtlLayout;
import io.taishan.kv.proto.TtlStateSpec;
import io.taishan.kv.proto.UploadSnapshotRequest;
import io.taishan.kv.proto.UploadSnapshotResponse;
import io.taishan.kv.proto.ValueResult;
import io.taishan.kv.proto.WriteOp;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.proto.WriteResponse;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.protocol.ScanRange;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.annotation.Nullable;

/**
 * The {@link KvStore} over gRPC: per node, {@link KvClientConfig#readChannels()} connections for
 * reads and one for writes, filter fetches and administration (so a read never waits behind a write
 * batch on one HTTP/2 connection), each shard routed to its owner under the client's view of the
 * cluster ({@link ShardRouter}), a deadline on every attempt, bounded retries with backoff for
 * idempotent calls only.
 *
 * <p>The view comes from the seeds at connect and is refreshed when a node refuses a shard with a
 * view other than the client's ({@link ViewRefresher}, {@link ClusterConnections}): calls that take
 * shards (open, restore, clone) are then sent once more under the new view; every other call fails
 * with {@link ShardNotOwnedException}, since its lease came from the shard's old owner. A call that
 * takes shards and cannot reach a node asks the cluster too, and is sent once more if the view
 * changed (the node moved to a new address, or left). A call that takes shards on a node that
 * joined after the table was created creates the table there first.
 *
 * <p>Tables are created and dropped on every node; their shard counts are cached (from create or
 * describe) to route. Writes go out as one request per node in parallel, cut into several when the
 * server's limits demand, never splitting one shard's ops.
 *
 * <p>Two writes in flight at once (see {@link #writeAsync}) have no order between them, even for
 * the same shard; a caller that needs per-shard order waits for one before sending the next.
 *
 * <p>It has every facet of a {@link KvStore}, each being this object: {@link Filters} (each shard's
 * Bloom filter is fetched from its owner as a stream of chunks decoded straight into off-heap
 * memory), {@link Ttl}, {@link Admin} and {@link Durable} (one call per node in parallel, each
 * under {@link KvClientConfig#durableCallTimeout()}, never retried: a repeated upload would copy
 * everything again). Callers reach it through {@link KvStores#connect}.
 *
 * <p>Keys passed to reads are wrapped, not copied: they must not change until the call returns.
 * Thread-safe.
 */
final class GrpcKvStore
        implements KvStore, KvStore.Filters, KvStore.Ttl, KvStore.Admin, KvStore.Durable {
    private static final HealthRequest HEALTH = HealthRequest.getDefaultInstance();
    private static final long CLOSE_GRACE_MILLIS = 5_000;

    private final ClusterConnections connections;
    private final ShardRouter router;
    private final ViewRefresher refresher;
    private final KvLimits limits;
    private final RetryingCaller caller;
    private final RequestSplitter splitter;
    private final LargeValueTransfers large;
    private final ScheduledExecutorService retryScheduler;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Reads the values too large for a MultiGet answer of {@link #multiGetAsync}. */
    private final ExecutorService largeReads =
            Executors.newCachedThreadPool(ClientThreads.daemon("taishan-kv-client-large-read"));

    private GrpcKvStore(
            ClusterDiscovery.Cluster cluster,
            ClusterConnections connections,
            RetryingCaller caller,
            ScheduledExecutorService retryScheduler) {
        this.connections = connections;
        this.router =
                new ShardRouter(
                        new ShardRouter.Routing(cluster.view(), cluster.nodes()),
                        this::describeTable);
        this.limits = cluster.limits();
        this.caller = caller;
        this.splitter = new RequestSplitter(limits);
        this.large = new LargeValueTransfers(caller, limits);
        this.retryScheduler = retryScheduler;
        this.refresher = new ViewRefresher(connections, router);
    }

    /** See {@link KvStores#connect}. */
    static GrpcKvStore connect(KvClientConfig config) {
        ChannelSecurity security = ChannelSecurity.of(config);
        ScheduledExecutorService scheduler =
                Executors.newSingleThreadScheduledExecutor(
                        ClientThreads.daemon("taishan-kv-client-retry"));
        RetryingCaller caller = new RetryingCaller(config, scheduler);
        ClusterConnections connections = new ClusterConnections(config, security, caller);
        try {
            return new GrpcKvStore(connections.connect(), connections, caller, scheduler);
        } catch (RuntimeException e) {
            scheduler.shutdownNow();
            throw e;
        }
    }

    /** See {@link KvStores#describeCluster}. */
    static ClusterReport describeCluster(KvClientConfig config) {
        ChannelSecurity security = ChannelSecurity.of(config);
        ScheduledExecutorService scheduler =
                Executors.newSingleThreadScheduledExecutor(
                        ClientThreads.daemon("taishan-kv-client-retry"));
        Map<String, KvNode.Connections> opened = new LinkedHashMap<>();
        try {
            return ClusterDiscovery.describe(
                    config, security, new RetryingCaller(config, scheduler), opened);
        } finally {
            opened.values().forEach(KvNode.Connections::shutdownNow);
            scheduler.shutdownNow();
        }
    }

    @Override
    public Optional<Filters> filters() {
        return Optional.of(this);
    }

    @Override
    public Optional<Ttl> ttl() {
        return Optional.of(this);
    }

    @Override
    public Optional<Admin> admin() {
        return Optional.of(this);
    }

    @Override
    public Optional<Durable> durable() {
        return Optional.of(this);
    }

    @Override
    public List<String> nodeAddresses() {
        List<KvNode> nodes = router.nodes();
        List<String> addresses = new ArrayList<>(nodes.size());
        for (KvNode node : nodes) {
            addresses.add(node.address());
        }
        return addresses;
    }

    @Override
    public ClusterView clusterView() {
        return router.view();
    }

    @Override
    public List<UnownedShards> unownedShards(String table) {
        ensureOpen();
        DescribeShardsRequest request = DescribeShardsRequest.newBuilder().setTable(table).build();
        List<KvNode> nodes = router.nodes();
        List<DescribeShardsResponse> responses =
                onEveryNode(
                        nodes,
                        () -> "DescribeShards(" + table + ")",
                        table,
                        stub -> stub.describeShards(request));
        List<UnownedShards> result = new ArrayList<>();
        for (int i = 0; i < nodes.size(); i++) {
            result.add(
                    new UnownedShards(
                            router.view().node(nodes.get(i).index()),
                            List.copyOf(responses.get(i).getUnownedShardsList())));
        }
        return result;
    }

    // ---- tables

    @Override
    public TableInfo createTable(String name, int shardCount) {
        return create(name, shardCount, false);
    }

    @Override
    public TableInfo createTableIfAbsent(String name, int shardCount) {
        return create(name, shardCount, true);
    }

    /**
     * Node 0 decides whether the table existed; the others are asked with if_not_exists so that a
     * create that failed half-way through the nodes can be completed by repeating it.
     */
    private TableInfo create(String name, int shardCount, boolean ifNotExists) {
        ensureOpen();
        TableInfo created = null;
        for (KvNode node : router.nodes()) {
            CreateTableRequest request =
                    CreateTableRequest.newBuilder()
                            .setName(name)
                            .setShardCount(shardCount)
                            .setIfNotExists(ifNotExists || node.index() > 0)
                            .build();
            TableInfo info =
                    ProtoConversions.table(
                            caller.call(
                                            node,
                                            () -> "CreateTable(" + name + ", " + shardCount + ")",
                                            false,
                                            stub -> stub.createTable(request))
                                    .getTable());
            if (created == null) {
                created = info;
            }
        }
        router.remember(created);
        return created;
    }

    /**
     * Asks the nodes in name order until one has the table: a node that joined the cluster after
     * the table was created does not have it until a shard of it is taken there.
     */
    @Override
    public Optional<TableInfo> describeTable(String name) {
        ensureOpen();
        DescribeTableRequest request = DescribeTableRequest.newBuilder().setName(name).build();
        for (KvNode node : router.nodes()) {
            try {
                TableInfo info =
                        ProtoConversions.table(
                                caller.call(
                                                node,
                                                () -> "DescribeTable(" + name + ")",
                                                true,
                                                stub -> stub.describeTable(request))
                                        .getTable());
                router.remember(info);
                return Optional.of(info);
            } catch (TableNotFoundException e) {
                // next node
            }
        }
        router.forget(name);
        return Optional.empty();
    }

    /** Every node's tables, once each: a node that joined later lacks the older ones. */
    @Override
    public List<TableInfo> listTables() {
        ensureOpen();
        Map<String, TableInfo> result = new LinkedHashMap<>();
        for (ListTablesResponse response :
                onEveryNode(
                        router.nodes(),
                        () -> "ListTables",
                        null,
                        stub -> stub.listTables(ListTablesRequest.getDefaultInstance()))) {
            for (io.taishan.kv.proto.TableInfo table : response.getTablesList()) {
                result.putIfAbsent(table.getName(), ProtoConversions.table(table));
            }
        }
        return new ArrayList<>(result.values());
    }

    /** Fails when no node had the table; on some it may be gone already, or never was. */
    @Override
    public void dropTable(String name) {
        ensureOpen();
        DropTableRequest request = DropTableRequest.newBuilder().setName(name).build();
        router.forget(name);
        TableNotFoundException notFound = null;
        boolean dropped = false;
        for (KvNode node : router.nodes()) {
            try {
                caller.call(
                        node, () -> "DropTable(" + name + ")", false, s -> s.dropTable(request));
                dropped = true;
            } catch (TableNotFoundException e) {
                notFound = notFound == null ? e : notFound;
            }
        }
        if (!dropped && notFound != null) {
            throw notFound;
        }
    }

    // ---- ownership

    @Override
    public ShardLease openShard(String table, int shard) {
        OpenShardRequest request =
                OpenShardRequest.newBuilder().setTable(table).setShard(shard).build();
        return takeShard(
                table, table, shard, "OpenShard", stub -> stub.openShard(request).getEpoch());
    }

    /**
     * One shard taken by a unary call on its owner (routed by {@code routedBy}, whose shard count
     * equals {@code table}'s), the epoch the call returns made a lease of {@code table}.
     */
    private ShardLease takeShard(
            String table,
            String routedBy,
            int shard,
            String rpc,
            Function<KvServiceBlockingStub, Long> epochOf) {
        return takingShards(
                table,
                () -> {
                    KvNode node = router.nodeFor(routedBy, shard);
                    long epoch = callShard(node, routedBy, shard, rpc, false, epochOf);
                    return new ShardLease(table, shard, epoch, node.name());
                });
    }

    @Override
    public List<ShardLease> openShards(String table, int[] shards, String writer, boolean wipe) {
        return takingShards(table, () -> openShardsOnce(table, shards, writer, wipe));
    }

    private List<ShardLease> openShardsOnce(
            String table, int[] shards, String writer, boolean wipe) {
        ensureOpen();
        TableInfo info = router.tableInfo(table);
        Map<KvNode, OpenShardsRequest.Builder> byNode = new LinkedHashMap<>();
        for (int shard : shards) {
            byNode.computeIfAbsent(
                            router.nodeFor(info, shard),
                            n ->
                                    OpenShardsRequest.newBuilder()
                                            .setTable(table)
                                            .setWriter(writer)
                                            .setWipe(wipe))
                    .addShards(shard);
        }
        List<OpenShardsRequest> requests = new ArrayList<>(byNode.size());
        List<KvNode> targets = new ArrayList<>(byNode.keySet());
        List<CompletableFuture<OpenShardsResponse>> pending = new ArrayList<>(byNode.size());
        for (Map.Entry<KvNode, OpenShardsRequest.Builder> entry : byNode.entrySet()) {
            OpenShardsRequest request = entry.getValue().build();
            requests.add(request);
            pending.add(
                    caller.callAsync(
                            entry.getKey(),
                            () ->
                                    "OpenShards("
                                            + table
                                            + ", "
                                            + request.getShardsCount()
                                            + " shards)",
                            false,
                            stub -> stub.openShards(request)));
        }
        Map<Integer, ShardLease> byShard = new HashMap<>();
        List<OpenShardsResponse> responses = awaitAll(pending, table);
        for (int n = 0; n < requests.size(); n++) {
            OpenShardsRequest request = requests.get(n);
            OpenShardsResponse response = responses.get(n);
            String node = targets.get(n).name();
            for (int i = 0; i < request.getShardsCount(); i++) {
                int shard = request.getShards(i);
                byShard.put(shard, new ShardLease(table, shard, response.getEpochs(i), node));
            }
        }
        List<ShardLease> leases = new ArrayList<>(shards.length);
        for (int shard : shards) {
            leases.add(byShard.get(shard));
        }
        return leases;
    }

    @Override
    public List<ShardLease> restoreShards(
            String table, String writer, List<ShardRestore> restores) {
        return takingShards(table, () -> restoreShardsOnce(table, writer, restores, Map.of()))
                .leases();
    }

    @Override
    public DurableRestore restoreShards(
            String table, String writer, List<ShardRestore> restores, List<DurableCut> cuts) {
        Map<String, DurableCut> byId = new LinkedHashMap<>();
        for (DurableCut cut : cuts) {
            byId.put(cut.cutId(), cut);
        }
        for (ShardRestore r : restores) {
            if (r.durableCutId() != null && !byId.containsKey(r.durableCutId())) {
                throw new IllegalArgumentException(
                        "shard "
                                + r.shard()
                                + " names durable cut "
                                + r.durableCutId()
                                + ", which is not among the cuts given");
            }
        }
        return takingShards(table, () -> restoreShardsOnce(table, writer, restores, byId));
    }

    /**
     * One RestoreShards per node, in parallel; each node gets the durable cuts its shards name.
     * With cuts named, under the deadline of calls to checkpoint storage (a node may download).
     */
    private DurableRestore restoreShardsOnce(
            String table,
            String writer,
            List<ShardRestore> restores,
            Map<String, DurableCut> cuts) {
        ensureOpen();
        TableInfo info = router.tableInfo(table);
        Map<KvNode, RestoreShardsRequest.Builder> byNode = new LinkedHashMap<>();
        Map<KvNode, Set<String>> cutsByNode = new HashMap<>();
        for (ShardRestore r : restores) {
            KvNode node = router.nodeFor(info, r.shard());
            io.taishan.kv.proto.ShardRestore.Builder shard =
                    io.taishan.kv.proto.ShardRestore.newBuilder()
                            .setShard(r.shard())
                            .setSourceTable(r.sourceTable())
                            .setSnapshotId(r.snapshotId());
            if (r.durableCutId() != null) {
                shard.setDurableCutId(r.durableCutId());
                cutsByNode.computeIfAbsent(node, n -> new LinkedHashSet<>()).add(r.durableCutId());
            }
            byNode.computeIfAbsent(
                            node,
                            n ->
                                    RestoreShardsRequest.newBuilder()
                                            .setTable(table)
                                            .setWriter(writer))
                    .addShards(shard);
        }
        List<RestoreShardsRequest> requests = new ArrayList<>(byNode.size());
        List<KvNode> targets = new ArrayList<>(byNode.keySet());
        List<CompletableFuture<RestoreShardsResponse>> pending = new ArrayList<>(byNode.size());
        for (Map.Entry<KvNode, RestoreShardsRequest.Builder> entry : byNode.entrySet()) {
            Set<String> named = cutsByNode.getOrDefault(entry.getKey(), Set.of());
            for (String id : named) {
                entry.getValue().addDurableCuts(ProtoConversions.durableCut(cuts.get(id)));
            }
            RestoreShardsRequest request = entry.getValue().build();
            requests.add(request);
            Supplier<String> what =
                    () -> "RestoreShards(" + table + ", " + request.getShardsCount() + " shards)";
            pending.add(
                    named.isEmpty()
                            ? caller.callAsync(
                                    entry.getKey(),
                                    what,
                                    false,
                                    stub -> stub.restoreShards(request))
                            : caller.callAsync(
                                    entry.getKey(),
                                    what,
                                    false,
                                    caller.durableTimeoutNanos(),
                                    stub -> stub.restoreShards(request)));
        }
        Map<Integer, ShardLease> byShard = new HashMap<>();
        List<RestoreShardsResponse> responses = awaitAll(pending, table);
        long downloaded = 0;
        for (int n = 0; n < requests.size(); n++) {
            RestoreShardsRequest request = requests.get(n);
            RestoreShardsResponse response = responses.get(n);
            String node = targets.get(n).name();
            downloaded += response.getDownloadedBytes();
            for (int i = 0; i < request.getShardsCount(); i++) {
                int shard = request.getShards(i).getShard();
                byShard.put(shard, new ShardLease(table, shard, response.getEpochs(i), node));
            }
        }
        List<ShardLease> leases = new ArrayList<>(restores.size());
        for (ShardRestore r : restores) {
            leases.add(byShard.get(r.shard()));
        }
        return new DurableRestore(leases, downloaded);
    }

    @Override
    public DurableSnapshot uploadSnapshot(
            String table,
            long snapshotId,
            int[] shards,
            String sharedDir,
            String exclusiveDir,
            Set<String> reusablePaths) {
        ensureOpen();
        TableInfo info = router.tableInfo(table);
        Map<KvNode, UploadSnapshotRequest.Builder> byNode = new LinkedHashMap<>();
        for (int shard : shards) {
            byNode.computeIfAbsent(
                            router.nodeFor(info, shard),
                            n ->
                                    UploadSnapshotRequest.newBuilder()
                                            .setTable(table)
                                            .setSnapshotId(snapshotId)
                                            .setSharedDir(sharedDir)
                                            .setExclusiveDir(exclusiveDir)
                                            .addAllReusablePaths(reusablePaths))
                    .addShards(shard);
        }
        List<CompletableFuture<UploadSnapshotResponse>> pending = new ArrayList<>(byNode.size());
        for (Map.Entry<KvNode, UploadSnapshotRequest.Builder> entry : byNode.entrySet()) {
            UploadSnapshotRequest request = entry.getValue().build();
            pending.add(
                    caller.callAsync(
                            entry.getKey(),
                            () ->
                                    "UploadSnapshot("
                                            + table
                                            + ", snapshot "
                                            + snapshotId
                                            + ", "
                                            + request.getShardsCount()
                                            + " shards)",
                            false,
                            caller.durableTimeoutNanos(),
                            stub -> stub.uploadSnapshot(request)));
        }
        // One node's failure fails the call: the nodes still uploading stop (and delete what they
        // wrote) rather than finish for nothing.
        for (CompletableFuture<UploadSnapshotResponse> call : pending) {
            call.whenComplete(
                    (r, e) -> {
                        if (e != null) {
                            pending.forEach(p -> p.cancel(true));
                        }
                    });
        }
        List<UploadSnapshotResponse> responses;
        try {
            responses = awaitAll(pending, table);
        } catch (RuntimeException e) {
            pending.forEach(p -> p.cancel(true));
            List<DurableCut> finished = new ArrayList<>();
            for (CompletableFuture<UploadSnapshotResponse> call : pending) {
                if (call.isDone() && !call.isCompletedExceptionally()) {
                    for (io.taishan.kv.proto.DurableCut cut : call.join().getCutsList()) {
                        finished.add(ProtoConversions.durableCut(cut));
                    }
                }
            }
            if (!finished.isEmpty() && e instanceof KvException k) {
                throw new DurableUploadFailedException(k, finished);
            }
            throw e;
        }
        List<DurableCut> cuts = new ArrayList<>();
        long uploaded = 0;
        for (UploadSnapshotResponse response : responses) {
            uploaded += response.getUploadedBytes();
            for (io.taishan.kv.proto.DurableCut cut : response.getCutsList()) {
                cuts.add(ProtoConversions.durableCut(cut));
            }
        }
        return new DurableSnapshot(cuts, uploaded);
    }

    // ---- reads

    @Nullable
    @Override
    public byte[] get(ShardLease lease, byte[] key) {
        GetRequest request =
                GetRequest.newBuilder()
                        .setTable(lease.table())
                        .setShard(shardRef(lease))
                        .setKey(UnsafeByteOperations.unsafeWrap(key))
                        .build();
        GetResponse response =
                readShard(lease, KvServiceGrpc.getGetMethod(), request, GrpcKvStore::describeGet);
        if (response.getValueChunked()) {
            return readChunked(request);
        }
        return response.getFound() ? response.getValue().toByteArray() : null;
    }

    /**
     * A value the server would not send inline, by ReadValue on the bulk connection; null if it was
     * deleted meanwhile.
     */
    @Nullable
    private byte[] readChunked(GetRequest request) {
        ensureOpen();
        KvNode node = router.nodeFor(request.getTable(), request.getShard().getShard());
        try {
            return large.read(node, request, () -> describeReadValue(request));
        } catch (TableNotFoundException | ShardNotOwnedException e) {
            throw refused(request.getTable(), e);
        }
    }

    private static String describeReadValue(GetRequest request) {
        return describe("ReadValue", request.getTable(), request.getShard().getShard())
                + " key "
                + RequestSplitter.hexPreview(request.getKey());
    }

    @Nullable
    private byte[] readChunked(ShardLease lease, ByteString key) {
        return readChunked(
                GetRequest.newBuilder()
                        .setTable(lease.table())
                        .setShard(shardRef(lease))
                        .setKey(key)
                        .build());
    }

    @Override
    public List<byte[]> multiGet(ShardLease lease, List<byte[]> keys) {
        if (keys.isEmpty()) {
            ensureOpen();
            return new ArrayList<>();
        }
        ShardRef shardRef = shardRef(lease);
        List<KeyRef> keyRefs = new ArrayList<>(keys.size());
        for (byte[] key : keys) {
            ByteString wrapped = UnsafeByteOperations.unsafeWrap(key);
            splitter.checkKey(wrapped, "multi-get", lease.shard());
            keyRefs.add(KeyRef.newBuilder().setShard(shardRef).setKey(wrapped).build());
        }
        List<MultiGetRequest> requests = splitter.splitMultiGet(lease.table(), keyRefs);
        List<MultiGetResponse> responses;
        if (requests.size() == 1) {
            MultiGetRequest only = requests.get(0);
            MultiGetResponse response =
                    readShard(
                            lease,
                            KvServiceGrpc.getMultiGetMethod(),
                            only,
                            GrpcKvStore::describeMultiGet);
            responses = List.of(response);
        } else {
            KvNode node = router.nodeFor(lease);
            List<CompletableFuture<MultiGetResponse>> pending = new ArrayList<>(requests.size());
            for (MultiGetRequest request : requests) {
                pending.add(
                        caller.unaryAsync(
                                node,
                                KvNode.Lane.READ,
                                KvServiceGrpc.getMultiGetMethod(),
                                request,
                                true,
                                GrpcKvStore::describeMultiGet));
            }
            responses = awaitAll(pending, lease.table());
        }
        List<byte[]> values = new ArrayList<>(keys.size());
        int k = 0;
        for (int i = 0; i < responses.size(); i++) {
            MultiGetResponse response = responses.get(i);
            int asked = requests.get(i).getKeysCount();
            if (response.getValuesCount() != asked) {
                throw new KvException(
                        ErrorCode.ERROR_CODE_UNSPECIFIED,
                        "MultiGet answered "
                                + response.getValuesCount()
                                + " values for "
                                + asked
                                + " keys",
                        router.nodeFor(lease.table(), lease.shard()).address(),
                        null);
            }
            for (ValueResult value : response.getValuesList()) {
                if (value.getValueChunked()) {
                    values.add(readChunked(lease, keyRefs.get(k).getKey()));
                } else {
                    values.add(value.getFound() ? value.getValue().toByteArray() : null);
                }
                k++;
            }
        }
        return values;
    }

    @Override
    public CompletableFuture<List<byte[]>> multiGetAsync(
            List<ShardLease> leases, List<byte[]> keys) {
        if (leases.size() != keys.size()) {
            throw new IllegalArgumentException(
                    leases.size() + " leases for " + keys.size() + " keys: one lease per key");
        }
        ensureOpen();
        if (keys.isEmpty()) {
            return CompletableFuture.completedFuture(new ArrayList<>());
        }
        String table = leases.get(0).table();
        TableInfo info = router.tableInfo(table);
        Map<KvNode, List<Integer>> byNode = new LinkedHashMap<>();
        for (int i = 0; i < keys.size(); i++) {
            ShardLease lease = leases.get(i);
            if (!lease.table().equals(table)) {
                throw new IllegalArgumentException(
                        "one multiGetAsync call covers one table, got '"
                                + table
                                + "' and '"
                                + lease.table()
                                + "'");
            }
            byNode.computeIfAbsent(router.nodeFor(info, lease), n -> new ArrayList<>()).add(i);
        }
        // Requests in flight, each with the indexes of the keys it asks for, in its order.
        List<int[]> asked = new ArrayList<>();
        List<CompletableFuture<MultiGetResponse>> pending = new ArrayList<>();
        for (Map.Entry<KvNode, List<Integer>> entry : byNode.entrySet()) {
            List<KeyRef> refs = new ArrayList<>(entry.getValue().size());
            for (int i : entry.getValue()) {
                ByteString wrapped = UnsafeByteOperations.unsafeWrap(keys.get(i));
                splitter.checkKey(wrapped, "multi-get", leases.get(i).shard());
                refs.add(
                        KeyRef.newBuilder()
                                .setShard(shardRef(leases.get(i)))
                                .setKey(wrapped)
                                .build());
            }
            int next = 0;
            for (MultiGetRequest request : splitter.splitMultiGet(table, refs)) {
                int[] indexes = new int[request.getKeysCount()];
                for (int j = 0; j < indexes.length; j++) {
                    indexes[j] = entry.getValue().get(next++);
                }
                asked.add(indexes);
                pending.add(
                        caller.unaryAsync(
                                entry.getKey(),
                                KvNode.Lane.READ,
                                KvServiceGrpc.getMultiGetMethod(),
                                request,
                                true,
                                GrpcKvStore::describeMultiGet));
            }
        }
        return CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0]))
                .handle((ignored, failure) -> joinAll(pending, table))
                .thenCompose(responses -> multiGetValues(leases, keys, asked, responses));
    }

    /** The values of answered MultiGets by key index, chunked ones read by streams of their own. */
    private CompletableFuture<List<byte[]>> multiGetValues(
            List<ShardLease> leases,
            List<byte[]> keys,
            List<int[]> asked,
            List<MultiGetResponse> responses) {
        byte[][] values = new byte[keys.size()][];
        List<Integer> chunked = new ArrayList<>();
        for (int r = 0; r < responses.size(); r++) {
            MultiGetResponse response = responses.get(r);
            int[] indexes = asked.get(r);
            if (response.getValuesCount() != indexes.length) {
                throw new KvException(
                        ErrorCode.ERROR_CODE_UNSPECIFIED,
                        "MultiGet answered "
                                + response.getValuesCount()
                                + " values for "
                                + indexes.length
                                + " keys",
                        router.nodeFor(
                                        leases.get(indexes[0]).table(),
                                        leases.get(indexes[0]).shard())
                                .address(),
                        null);
            }
            for (int j = 0; j < indexes.length; j++) {
                ValueResult value = response.getValues(j);
                if (value.getValueChunked()) {
                    chunked.add(indexes[j]);
                } else if (value.getFound()) {
                    values[indexes[j]] = value.getValue().toByteArray();
                }
            }
        }
        if (chunked.isEmpty()) {
            return CompletableFuture.completedFuture(Arrays.asList(values));
        }
        // Streams block: read them off the thread that delivered the answers.
        return CompletableFuture.supplyAsync(
                () -> {
                    for (int i : chunked) {
                        values[i] =
                                readChunked(
                                        leases.get(i),
                                        UnsafeByteOperations.unsafeWrap(keys.get(i)));
                    }
                    return Arrays.asList(values);
                },
                largeReads);
    }

    @Override
    public CloseableIterator<KvEntry> scan(
            ShardLease lease, ScanRange range, int pageSize, boolean keysOnly) {
        if (pageSize < 0) {
            throw new IllegalArgumentException("page size must be >= 0: " + pageSize);
        }
        ensureOpen();
        ScanRequest firstPage =
                ScanRequest.newBuilder()
                        .setTable(lease.table())
                        .setShard(shardRef(lease))
                        // Wrapped: start() and end() are copies made for this call.
                        .setStartKey(UnsafeByteOperations.unsafeWrap(range.start()))
                        .setEndKey(UnsafeByteOperations.unsafeWrap(range.end()))
                        .setLimit(pageSize)
                        .setKeysOnly(keysOnly)
                        .build();
        return new ScanPageIterator(
                firstPage,
                request -> scanPage(lease, request),
                key -> readChunked(lease, key),
                () -> router.nodeFor(lease.table(), lease.shard()).address());
    }

    /** Scans per MultiScan call: bounds the request, whatever the number of shards. */
    static final int SCANS_PER_CALL = 4096;

    @Override
    public List<Page> firstPages(List<PageQuery> queries) {
        ensureOpen();
        if (queries.isEmpty()) {
            return new ArrayList<>();
        }
        String table = queries.get(0).lease().table();
        TableInfo info = router.tableInfo(table);
        Map<KvNode, List<Integer>> byNode = new LinkedHashMap<>();
        for (int i = 0; i < queries.size(); i++) {
            PageQuery q = queries.get(i);
            if (!q.lease().table().equals(table)) {
                throw new IllegalArgumentException(
                        "one firstPages call covers one table, got '"
                                + table
                                + "' and '"
                                + q.lease().table()
                                + "'");
            }
            byNode.computeIfAbsent(router.nodeFor(info, q.lease()), n -> new ArrayList<>()).add(i);
        }
        List<List<Integer>> chunks = new ArrayList<>();
        List<CompletableFuture<MultiScanResponse>> pending = new ArrayList<>();
        for (Map.Entry<KvNode, List<Integer>> entry : byNode.entrySet()) {
            List<Integer> indexes = entry.getValue();
            for (int from = 0; from < indexes.size(); from += SCANS_PER_CALL) {
                List<Integer> chunk =
                        indexes.subList(from, Math.min(indexes.size(), from + SCANS_PER_CALL));
                MultiScanRequest.Builder request = MultiScanRequest.newBuilder().setTable(table);
                for (int i : chunk) {
                    PageQuery q = queries.get(i);
                    request.addScans(
                            ScanRequest.newBuilder()
                                    .setTable(table)
                                    .setShard(shardRef(q.lease()))
                                    // Wrapped: start() and end() are copies made for this call.
                                    .setStartKey(UnsafeByteOperations.unsafeWrap(q.range().start()))
                                    .setEndKey(UnsafeByteOperations.unsafeWrap(q.range().end()))
                                    .setLimit(q.limit())
                                    .setKeysOnly(q.keysOnly()));
                }
                MultiScanRequest built = request.build();
                chunks.add(chunk);
                pending.add(
                        caller.unaryAsync(
                                entry.getKey(),
                                KvNode.Lane.READ,
                                KvServiceGrpc.getMultiScanMethod(),
                                built,
                                true,
                                r -> "MultiScan(" + table + ", " + r.getScansCount() + " scans)"));
            }
        }
        List<Page> pages = new ArrayList<>(queries.size());
        for (int i = 0; i < queries.size(); i++) {
            pages.add(null);
        }
        List<MultiScanResponse> responses = awaitAll(pending, table);
        for (int c = 0; c < chunks.size(); c++) {
            List<Integer> chunk = chunks.get(c);
            MultiScanResponse response = responses.get(c);
            for (int j = 0; j < response.getPagesCount() && j < chunk.size(); j++) {
                int i = chunk.get(j);
                pages.set(i, toPage(queries.get(i), response.getPages(j)));
            }
        }
        return pages;
    }

    /** A page of a MultiScan; a value too large to travel inline is read on its own. */
    private Page toPage(PageQuery query, ScanResponse response) {
        List<KvEntry> entries = new ArrayList<>(response.getEntriesCount());
        for (KeyValue kv : response.getEntriesList()) {
            byte[] value;
            if (query.keysOnly()) {
                value = new byte[0];
            } else if (kv.getValueChunked()) {
                value = readChunked(query.lease(), kv.getKey());
                if (value == null) {
                    continue;
                }
            } else {
                value = kv.getValue().toByteArray();
            }
            entries.add(new KvEntry(kv.getKey().toByteArray(), value));
        }
        return new Page(entries, response.getHasMore());
    }

    private ScanResponse scanPage(ShardLease lease, ScanRequest request) {
        return readShard(lease, KvServiceGrpc.getScanMethod(), request, GrpcKvStore::describeScan);
    }

    // ---- writes

    @Override
    public WriteResult write(WriteBatch batch) {
        ensureOpen();
        if (batch.isEmpty()) {
            return WriteResult.EMPTY;
        }
        List<ShardWrite> shardWrites = batch.shardWrites();
        checkOps(batch, shardWrites);
        TableInfo info = router.tableInfo(batch.table());
        if (hasChunkedValues(batch)) {
            return await(sendWrites(batch, info, shardWrites), "Write(" + batch.table() + ")");
        }
        List<RoutedWrite> writes = route(batch, info, shardWrites);
        if (writes.size() > 1) {
            return await(send(batch.table(), shardWrites, writes), "Write(" + batch.table() + ")");
        }
        // One request: on this thread, as the blocking stub does it without a thread hop.
        WriteRequest request = writes.get(0).request();
        try {
            WriteResponse response =
                    caller.unary(
                            writes.get(0).node(),
                            KvNode.Lane.BULK,
                            KvServiceGrpc.getWriteMethod(),
                            request,
                            false,
                            GrpcKvStore::describeWrite);
            return combine(shardWrites, List.of(response));
        } catch (TableNotFoundException | ShardNotOwnedException e) {
            throw refused(batch.table(), e);
        }
    }

    /**
     * Sends without blocking: checks sizes and cuts the requests first (failing the future before
     * anything is sent), describes the table first if this client does not know its shard count.
     * The future completes once every request has answered, on a gRPC thread; it fails with the
     * first failure, the others suppressed. Shards whose requests succeeded keep their writes.
     */
    @Override
    public CompletableFuture<WriteResult> writeAsync(WriteBatch batch) {
        try {
            ensureOpen();
            if (batch.isEmpty()) {
                return CompletableFuture.completedFuture(WriteResult.EMPTY);
            }
            List<ShardWrite> shardWrites = batch.shardWrites();
            checkOps(batch, shardWrites);
            TableInfo known = router.known(batch.table());
            if (!router.needsShardCounts() || known != null) {
                return sendWrites(batch, known, shardWrites);
            }
            DescribeTableRequest describe =
                    DescribeTableRequest.newBuilder().setName(batch.table()).build();
            CompletableFuture<WriteResult> result = new CompletableFuture<>();
            caller.callAsync(
                            router.first(),
                            () -> "DescribeTable(" + batch.table() + ")",
                            true,
                            stub -> stub.describeTable(describe))
                    .whenComplete(
                            (described, failure) -> {
                                if (failure != null) {
                                    result.completeExceptionally(failure);
                                    return;
                                }
                                TableInfo info = ProtoConversions.table(described.getTable());
                                router.remember(info);
                                sendWrites(batch, info, shardWrites)
                                        .whenComplete(
                                                (written, writeFailure) -> {
                                                    if (writeFailure != null) {
                                                        result.completeExceptionally(writeFailure);
                                                    } else {
                                                        result.complete(written);
                                                    }
                                                });
                            });
            return result;
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** One request and the node it goes to. */
    private record RoutedWrite(KvNode node, WriteRequest request) {}

    private CompletableFuture<WriteResult> sendWrites(
            WriteBatch batch, @Nullable TableInfo info, List<ShardWrite> shardWrites) {
        String table = batch.table();
        if (!hasChunkedValues(batch)) {
            return send(table, shardWrites, route(batch, info, shardWrites));
        }
        return stageChunkedValues(batch, info, shardWrites)
                .thenCompose(staged -> send(table, staged, route(batch, info, staged)));
    }

    /**
     * Checks every op against the server's limits, one by one only when the batch's largest key or
     * value is over them: a batch within both (nearly every one) is not walked.
     */
    private void checkOps(WriteBatch batch, List<ShardWrite> shardWrites) {
        if (batch.largestKeyBytes() > limits.maxKeyBytes()
                || batch.largestValueBytes() > limits.maxValueBytes()) {
            splitter.checkOps(shardWrites);
        }
    }

    private boolean hasChunkedValues(WriteBatch batch) {
        return limits.chunked(batch.largestValueBytes());
    }

    /** The value of a put or append too large to go inline, else null. */
    @Nullable
    private ByteString chunkedValue(WriteOp op) {
        ByteString value =
                switch (op.getOpCase()) {
                    case PUT -> op.getPut().getValue();
                    case APPEND -> op.getAppend().getValue();
                    default -> null;
                };
        return value != null && limits.chunked(value.size()) ? value : null;
    }

    /**
     * Uploads every value too large to go inline, one after the other (the server holds each until
     * its Write), and answers the shard writes with those ops naming their staged values.
     */
    private CompletableFuture<List<ShardWrite>> stageChunkedValues(
            WriteBatch batch, @Nullable TableInfo info, List<ShardWrite> shardWrites) {
        String table = batch.table();
        CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
        List<ShardWrite.Builder> staged = new ArrayList<>(shardWrites.size());
        for (ShardWrite w : shardWrites) {
            ShardWrite.Builder b = w.toBuilder();
            staged.add(b);
            KvNode node = router.nodeFor(info, batch.leaseOf(w.getShard()));
            ShardRef shard =
                    ShardRef.newBuilder().setShard(w.getShard()).setEpoch(w.getEpoch()).build();
            for (int i = 0; i < w.getOpsCount(); i++) {
                WriteOp op = w.getOps(i);
                ByteString value = chunkedValue(op);
                if (value == null) {
                    continue;
                }
                int at = i;
                chain =
                        chain.thenCompose(
                                ignored ->
                                        large.upload(
                                                        node,
                                                        table,
                                                        shard,
                                                        value,
                                                        () ->
                                                                describe(
                                                                                "UploadValue",
                                                                                table,
                                                                                w.getShard())
                                                                        + " ("
                                                                        + value.size()
                                                                        + " bytes)")
                                                .thenAccept(id -> b.setOps(at, staged(op, id))));
            }
        }
        return chain.thenApply(
                ignored -> {
                    List<ShardWrite> result = new ArrayList<>(staged.size());
                    for (ShardWrite.Builder b : staged) {
                        result.add(b.build());
                    }
                    return result;
                });
    }

    private static WriteOp staged(WriteOp op, long id) {
        return switch (op.getOpCase()) {
            case PUT ->
                    op.toBuilder()
                            .setPut(
                                    op.getPut().toBuilder()
                                            .setValue(ByteString.EMPTY)
                                            .setStagedValueId(id))
                            .build();
            case APPEND ->
                    op.toBuilder()
                            .setAppend(
                                    op.getAppend().toBuilder()
                                            .setValue(ByteString.EMPTY)
                                            .setStagedValueId(id))
                            .build();
            default -> throw new IllegalArgumentException("not a put or append: " + op);
        };
    }

    /**
     * Groups the shard writes by owner and cuts each node's share into requests, all before the
     * first is sent: a batch over the limits sends nothing.
     */
    private List<RoutedWrite> route(
            WriteBatch batch, @Nullable TableInfo info, List<ShardWrite> shardWrites) {
        String table = batch.table();
        Map<KvNode, List<ShardWrite>> byNode = new LinkedHashMap<>();
        for (ShardWrite shardWrite : shardWrites) {
            KvNode node = router.nodeFor(info, batch.leaseOf(shardWrite.getShard()));
            byNode.computeIfAbsent(node, n -> new ArrayList<>()).add(shardWrite);
        }
        List<RoutedWrite> writes = new ArrayList<>();
        for (Map.Entry<KvNode, List<ShardWrite>> entry : byNode.entrySet()) {
            for (WriteRequest request : splitter.splitWrites(table, entry.getValue())) {
                writes.add(new RoutedWrite(entry.getKey(), request));
            }
        }
        return writes;
    }

    private CompletableFuture<WriteResult> send(
            String table, List<ShardWrite> shardWrites, List<RoutedWrite> writes) {
        List<CompletableFuture<WriteResponse>> pending = new ArrayList<>(writes.size());
        for (RoutedWrite write : writes) {
            pending.add(
                    caller.unaryAsync(
                            write.node(),
                            KvNode.Lane.BULK,
                            KvServiceGrpc.getWriteMethod(),
                            write.request(),
                            false,
                            GrpcKvStore::describeWrite));
        }
        CompletableFuture<WriteResult> result = new CompletableFuture<>();
        CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0]))
                .whenComplete(
                        (ignored, anyFailure) -> {
                            try {
                                result.complete(combine(shardWrites, joinAll(pending, table)));
                            } catch (RuntimeException e) {
                                result.completeExceptionally(e);
                            }
                        });
        return result;
    }

    /**
     * The markers' snapshots, shard by shard in the batch's first-touch order, and the shards'
     * filter versions.
     */
    private static WriteResult combine(
            List<ShardWrite> shardWrites, List<WriteResponse> responses) {
        Map<Integer, ShardWriteResult> byShard = new HashMap<>();
        Map<Integer, Long> filterVersions = null;
        boolean anySnapshot = false;
        for (WriteResponse response : responses) {
            for (ShardWriteResult shardResult : response.getResultsList()) {
                byShard.put(shardResult.getShard(), shardResult);
                anySnapshot |= shardResult.getSnapshotsCount() > 0;
                if (shardResult.hasFilterVersion()) {
                    if (filterVersions == null) {
                        filterVersions = new HashMap<>();
                    }
                    filterVersions.put(shardResult.getShard(), shardResult.getFilterVersion());
                }
            }
        }
        Map<Integer, Long> versions =
                filterVersions == null ? Map.of() : Map.copyOf(filterVersions);
        if (!anySnapshot) {
            return versions.isEmpty() ? WriteResult.EMPTY : new WriteResult(List.of(), versions);
        }
        List<SnapshotInfo> snapshots = new ArrayList<>();
        for (ShardWrite shardWrite : shardWrites) {
            ShardWriteResult shardResult = byShard.get(shardWrite.getShard());
            if (shardResult != null) {
                for (io.taishan.kv.proto.SnapshotInfo s : shardResult.getSnapshotsList()) {
                    snapshots.add(ProtoConversions.snapshot(s));
                }
            }
        }
        return new WriteResult(List.copyOf(snapshots), versions);
    }

    // ---- snapshots

    @Override
    public List<SnapshotInfo> snapshot(List<ShardLease> shards, long snapshotId, boolean pinned) {
        ensureOpen();
        if (shards.isEmpty()) {
            return List.of();
        }
        String table = shards.get(0).table();
        Map<KvNode, SnapshotRequest.Builder> byNode = new LinkedHashMap<>();
        for (ShardLease lease : shards) {
            if (!lease.table().equals(table)) {
                throw new IllegalArgumentException(
                        "one snapshot call covers one table, got '"
                                + table
                                + "' and '"
                                + lease.table()
                                + "'");
            }
            byNode.computeIfAbsent(
                            router.nodeFor(lease),
                            n ->
                                    SnapshotRequest.newBuilder()
                                            .setTable(table)
                                            .setSnapshotId(snapshotId)
                                            .setPinned(pinned))
                    .addShards(shardRef(lease));
        }
        List<CompletableFuture<SnapshotResponse>> pending = new ArrayList<>(byNode.size());
        for (Map.Entry<KvNode, SnapshotRequest.Builder> entry : byNode.entrySet()) {
            SnapshotRequest request = entry.getValue().build();
            pending.add(
                    caller.callAsync(
                            entry.getKey(),
                            () -> "Snapshot(" + table + ", id " + snapshotId + ")",
                            true,
                            stub -> stub.snapshot(request)));
        }
        List<SnapshotInfo> result = new ArrayList<>(shards.size());
        for (SnapshotResponse response : awaitAll(pending, table)) {
            for (io.taishan.kv.proto.SnapshotInfo s : response.getSnapshotsList()) {
                result.add(ProtoConversions.snapshot(s));
            }
        }
        return result;
    }

    @Override
    public ShardLease restore(String table, int shard, long snapshotId) {
        RestoreRequest request =
                RestoreRequest.newBuilder()
                        .setTable(table)
                        .setShard(shard)
                        .setSnapshotId(snapshotId)
                        .build();
        return takeShard(table, table, shard, "Restore", stub -> stub.restore(request).getEpoch());
    }

    /** Routed by the source table: both have the same shard count, hence the same owner. */
    @Override
    public ShardLease cloneShard(
            String sourceTable, int shard, long snapshotId, String targetTable) {
        CloneRequest request =
                CloneRequest.newBuilder()
                        .setSourceTable(sourceTable)
                        .setShard(shard)
                        .setSnapshotId(snapshotId)
                        .setTargetTable(targetTable)
                        .build();
        return takeShard(
                targetTable, sourceTable, shard, "Clone", stub -> stub.clone(request).getEpoch());
    }

    @Override
    public List<SnapshotInfo> listSnapshots(String table) {
        ensureOpen();
        ListSnapshotsRequest request = ListSnapshotsRequest.newBuilder().setTable(table).build();
        List<SnapshotInfo> result =
                snapshotsOf(
                        onEveryNode(
                                () -> "ListSnapshots(" + table + ")",
                                table,
                                s -> s.listSnapshots(request)));
        result.sort(
                Comparator.comparingInt(SnapshotInfo::shard)
                        .thenComparingLong(SnapshotInfo::snapshotId));
        return result;
    }

    @Override
    public List<SnapshotInfo> listSnapshots(String table, int shard) {
        ListSnapshotsRequest request =
                ListSnapshotsRequest.newBuilder().setTable(table).setShard(shard).build();
        ListSnapshotsResponse response =
                callShard(table, shard, "ListSnapshots", true, stub -> stub.listSnapshots(request));
        return snapshotsOf(List.of(response));
    }

    @Override
    public boolean dropSnapshot(String table, int shard, long snapshotId) {
        DropSnapshotRequest request =
                DropSnapshotRequest.newBuilder()
                        .setTable(table)
                        .setShard(shard)
                        .setSnapshotId(snapshotId)
                        .build();
        return callShard(table, shard, "DropSnapshot", true, stub -> stub.dropSnapshot(request))
                .getDropped();
    }

    @Override
    public int dropSnapshot(String table, int[] shards, long snapshotId) {
        ensureOpen();
        TableInfo info = router.tableInfo(table);
        Map<KvNode, DropShardSnapshotsRequest.Builder> byNode = new LinkedHashMap<>();
        for (int shard : shards) {
            byNode.computeIfAbsent(
                            router.nodeFor(info, shard),
                            n ->
                                    DropShardSnapshotsRequest.newBuilder()
                                            .setTable(table)
                                            .setSnapshotId(snapshotId))
                    .addShards(shard);
        }
        List<CompletableFuture<DropShardSnapshotsResponse>> pending = new ArrayList<>();
        for (Map.Entry<KvNode, DropShardSnapshotsRequest.Builder> entry : byNode.entrySet()) {
            DropShardSnapshotsRequest request = entry.getValue().build();
            pending.add(
                    caller.callAsync(
                            entry.getKey(),
                            () -> "DropShardSnapshots(" + table + ", id " + snapshotId + ")",
                            true,
                            stub -> stub.dropShardSnapshots(request)));
        }
        int dropped = 0;
        for (DropShardSnapshotsResponse response : awaitAll(pending, table)) {
            dropped += response.getDropped();
        }
        return dropped;
    }

    @Override
    public int dropSnapshotsBelow(String table, long snapshotId) {
        ensureOpen();
        DropSnapshotsBelowRequest request =
                DropSnapshotsBelowRequest.newBuilder()
                        .setTable(table)
                        .setSnapshotId(snapshotId)
                        .build();
        int dropped = 0;
        for (var response :
                onEveryNode(
                        () -> "DropSnapshotsBelow(" + table + ", " + snapshotId + ")",
                        table,
                        stub -> stub.dropSnapshotsBelow(request))) {
            dropped += response.getDropped();
        }
        return dropped;
    }

    // ---- expiry of TTL'd state

    @Override
    public void registerTtlStates(String table, List<TtlState> states) {
        ensureOpen();
        RegisterTtlStatesRequest.Builder request =
                RegisterTtlStatesRequest.newBuilder().setTable(table);
        for (TtlState state : states) {
            request.addStates(
                    TtlStateSpec.newBuilder()
                            .setStateId(state.stateId())
                            .setTtlMillis(state.ttlMillis())
                            .setLayout(
                                    switch (state.layout()) {
                                        case VALUE -> TtlLayout.TTL_VALUE;
                                        case MAP_ENTRY -> TtlLayout.TTL_MAP_ENTRY;
                                        case LIST -> TtlLayout.TTL_LIST;
                                    })
                            .setFixedElementBytes(state.fixedElementBytes()));
        }
        RegisterTtlStatesRequest built = request.build();
        onEveryNode(
                () -> "RegisterTtlStates(" + table + ")",
                table,
                stub -> stub.registerTtlStates(built));
    }

    /** One call per node owning some of the shards; the future fails with the first failure. */
    @Override
    public CompletableFuture<Void> reportTtlTime(List<ShardLease> leases, long ttlTimeMillis) {
        ensureOpen();
        if (leases.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        String table = leases.get(0).table();
        Map<KvNode, ReportTtlTimeRequest.Builder> byNode = new LinkedHashMap<>();
        for (ShardLease lease : leases) {
            byNode.computeIfAbsent(
                            router.nodeFor(lease),
                            n ->
                                    ReportTtlTimeRequest.newBuilder()
                                            .setTable(table)
                                            .setTtlTimeMillis(ttlTimeMillis))
                    .addShards(shardRef(lease));
        }
        List<CompletableFuture<ReportTtlTimeResponse>> pending = new ArrayList<>(byNode.size());
        for (Map.Entry<KvNode, ReportTtlTimeRequest.Builder> entry : byNode.entrySet()) {
            ReportTtlTimeRequest request = entry.getValue().build();
            pending.add(
                    caller.callAsync(
                            entry.getKey(),
                            () -> "ReportTtlTime(" + table + ")",
                            true,
                            stub -> stub.reportTtlTime(request)));
        }
        return CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0]));
    }

    // ---- filters

    /**
     * Streams the filter from the shard's owner and decodes it chunk by chunk into off-heap memory,
     * so neither side holds it as one message. Retried as a whole (under a new deadline) on a
     * transient failure, like the other idempotent reads; not on FILTER_UNAVAILABLE.
     */
    @Override
    public ShardFilter fetchFilter(ShardLease lease) {
        FetchFilterRequest request =
                FetchFilterRequest.newBuilder()
                        .setTable(lease.table())
                        .setShard(shardRef(lease))
                        .build();
        return callShard(
                router.nodeFor(lease),
                lease.table(),
                lease.shard(),
                "FetchFilter",
                true,
                stub -> {
                    // A stream left unread (a bad filter) would run until its deadline.
                    Context.CancellableContext context = Context.current().withCancellation();
                    Context previous = context.attach();
                    try {
                        return receiveFilter(stub.fetchFilter(request), lease);
                    } finally {
                        context.detach(previous);
                        context.cancel(null);
                    }
                });
    }

    /**
     * Shards per FetchFilters call: 32,768 shards in 64 calls instead of 32,768, while one call's
     * filters (a few hundred bytes each for a shard of a few keys, MiBs for a large one) still fit
     * well within its deadline.
     */
    static final int FILTERS_PER_CALL = 512;

    /**
     * One stream per node and {@link #FILTERS_PER_CALL} shards, one after another; a call retried
     * as a whole on a transient failure (what it had received is freed), and when it fails for
     * good, each of its shards fails with that failure.
     */
    @Override
    public FilterBatch fetchFilters(List<ShardLease> leases) {
        ensureOpen();
        FilterBatch.checkLeases(leases);
        Map<KvNode, List<ShardLease>> byNode = new LinkedHashMap<>();
        Map<Integer, ShardFilter> filters = new HashMap<>();
        Map<Integer, KvException> failures = new HashMap<>();
        for (ShardLease lease : leases) {
            try {
                byNode.computeIfAbsent(router.nodeFor(lease), n -> new ArrayList<>()).add(lease);
            } catch (KvException e) {
                // A lease another node handed out, before the cluster changed.
                failures.put(lease.shard(), e);
            }
        }
        try {
            for (Map.Entry<KvNode, List<ShardLease>> entry : byNode.entrySet()) {
                List<ShardLease> ofNode = entry.getValue();
                for (int from = 0; from < ofNode.size(); from += FILTERS_PER_CALL) {
                    List<ShardLease> batch =
                            ofNode.subList(from, Math.min(ofNode.size(), from + FILTERS_PER_CALL));
                    fetchFilterBatch(entry.getKey(), batch, filters, failures);
                }
            }
        } catch (RuntimeException | Error e) {
            filters.values().forEach(ShardFilter::close);
            throw e;
        }
        return new FilterBatch(filters, failures);
    }

    private void fetchFilterBatch(
            KvNode node,
            List<ShardLease> batch,
            Map<Integer, ShardFilter> filters,
            Map<Integer, KvException> failures) {
        String table = batch.get(0).table();
        FetchFiltersRequest.Builder request = FetchFiltersRequest.newBuilder().setTable(table);
        Map<Integer, ShardLease> byShard = new HashMap<>();
        for (ShardLease lease : batch) {
            request.addShards(shardRef(lease));
            byShard.put(lease.shard(), lease);
        }
        FetchFiltersRequest built = request.build();
        Supplier<String> what =
                () -> "FetchFilters(" + table + ", " + batch.size() + " shards) on " + node;
        FilterBatch got;
        try {
            got =
                    caller.call(
                            node,
                            what,
                            true,
                            stub -> {
                                Context.CancellableContext context =
                                        Context.current().withCancellation();
                                Context previous = context.attach();
                                try {
                                    return receiveFilters(
                                            stub.fetchFilters(built), byShard, node.address());
                                } finally {
                                    context.detach(previous);
                                    context.cancel(null);
                                }
                            });
        } catch (KvException e) {
            if (e instanceof TableNotFoundException) {
                router.forget(table);
            }
            for (ShardLease lease : batch) {
                failures.put(lease.shard(), e);
            }
            return;
        }
        filters.putAll(got.filters());
        failures.putAll(got.failures());
    }

    /**
     * Reads one FetchFilters stream whole; a stream that breaks off frees what it had read and
     * fails (the caller retries the call). A malformed stream fails its remaining shards.
     */
    private FilterBatch receiveFilters(
            Iterator<FetchFilterResponse> responses,
            Map<Integer, ShardLease> byShard,
            String address) {
        Map<Integer, ShardFilter> filters = new HashMap<>();
        Map<Integer, KvException> failures = new HashMap<>();
        boolean done = false;
        try {
            while (responses.hasNext()) {
                FetchFilterResponse next = responses.next();
                if (next.hasRefused()) {
                    ShardRefusal refused = next.getRefused();
                    ShardLease lease = expected(byShard, refused.getShard(), filters, failures);
                    failures.put(
                            lease.shard(),
                            GrpcErrors.ofCode(
                                    refused.getCode(),
                                    describe("FetchFilters", lease.table(), lease.shard())
                                            + " failed: "
                                            + refused.getMessage(),
                                    address,
                                    1,
                                    null));
                    continue;
                }
                if (!next.hasHeader()) {
                    throw new MalformedFilterStream("a chunk where a filter's header belongs");
                }
                FilterHeader header = next.getHeader();
                ShardLease lease = expected(byShard, header.getShard(), filters, failures);
                ChunkInput in = new ChunkInput(responses);
                BloomFilter filter;
                try {
                    filter = BloomFilter.readFrom(in);
                } catch (IOException e) {
                    throw new MalformedFilterStream(
                            "shard " + lease.shard() + ": " + e.getMessage(), e);
                }
                filters.put(lease.shard(), new ShardFilter(lease, header.getVersion(), filter));
                if (in.bytesRead() != header.getSerializedBytes() || in.chunkLeft()) {
                    throw new MalformedFilterStream(
                            "shard "
                                    + lease.shard()
                                    + ": the header announced "
                                    + header.getSerializedBytes()
                                    + " bytes, the filter took "
                                    + in.bytesRead());
                }
            }
            done = true;
        } catch (MalformedFilterStream e) {
            // The server broke the protocol: not worth a retry; the shards it did not answer fail.
            KvException bad =
                    new KvException(
                            ErrorCode.ERROR_CODE_UNSPECIFIED,
                            "FetchFilters: a malformed response stream: " + e.getMessage(),
                            address,
                            e);
            filters.values().forEach(ShardFilter::close);
            filters.clear();
            for (int shard : byShard.keySet()) {
                failures.putIfAbsent(shard, bad);
            }
            done = true;
        } finally {
            if (!done) {
                filters.values().forEach(ShardFilter::close);
            }
        }
        for (Map.Entry<Integer, ShardLease> e : byShard.entrySet()) {
            if (!filters.containsKey(e.getKey()) && !failures.containsKey(e.getKey())) {
                failures.put(
                        e.getKey(),
                        new KvException(
                                ErrorCode.ERROR_CODE_UNSPECIFIED,
                                describe("FetchFilters", e.getValue().table(), e.getKey())
                                        + ": the stream ended without this shard",
                                address,
                                null));
            }
        }
        return new FilterBatch(filters, failures);
    }

    private static ShardLease expected(
            Map<Integer, ShardLease> byShard,
            int shard,
            Map<Integer, ShardFilter> filters,
            Map<Integer, KvException> failures) {
        ShardLease lease = byShard.get(shard);
        if (lease == null || filters.containsKey(shard) || failures.containsKey(shard)) {
            throw new MalformedFilterStream(
                    "shard " + shard + (lease == null ? " was not asked for" : " came twice"));
        }
        return lease;
    }

    /** A FetchFilters stream that broke the protocol. */
    private static final class MalformedFilterStream extends RuntimeException {
        private static final long serialVersionUID = 1L;

        MalformedFilterStream(String message) {
            super(message);
        }

        MalformedFilterStream(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Reads the stream; the caller's context bounds it, so the call ends with this method. */
    private ShardFilter receiveFilter(Iterator<FetchFilterResponse> responses, ShardLease lease) {
        String what = describe("FetchFilter", lease.table(), lease.shard());
        if (!responses.hasNext()) {
            throw badFilterStream(lease, what + ": the stream ended before its header", null);
        }
        FetchFilterResponse first = responses.next();
        if (!first.hasHeader()) {
            throw badFilterStream(lease, what + ": the stream did not start with a header", null);
        }
        FilterHeader header = first.getHeader();
        ChunkInput in = new ChunkInput(responses);
        BloomFilter filter;
        try {
            filter = BloomFilter.readFrom(in);
        } catch (IOException e) {
            throw badFilterStream(lease, what + ": " + e.getMessage(), e);
        }
        if (in.bytesRead() != header.getSerializedBytes() || in.hasMore()) {
            filter.close();
            throw badFilterStream(
                    lease,
                    what
                            + ": the header announced "
                            + header.getSerializedBytes()
                            + " bytes, the filter took "
                            + in.bytesRead()
                            + (in.hasMore() ? " and more followed" : ""),
                    null);
        }
        return new ShardFilter(lease, header.getVersion(), filter);
    }

    private KvException badFilterStream(ShardLease lease, String message, @Nullable Throwable e) {
        return new KvException(
                ErrorCode.ERROR_CODE_UNSPECIFIED,
                message,
                router.nodeFor(lease.table(), lease.shard()).address(),
                e);
    }

    /**
     * The chunks of a filter stream as one input; a failed call surfaces as the {@code
     * StatusRuntimeException} the iterator throws, which the retrying caller handles.
     */
    private static final class ChunkInput extends InputStream {
        private final Iterator<FetchFilterResponse> responses;
        private com.google.protobuf.ByteString chunk = com.google.protobuf.ByteString.EMPTY;
        private int position;
        private long bytesRead;

        ChunkInput(Iterator<FetchFilterResponse> responses) {
            this.responses = responses;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] into, int offset, int length) throws IOException {
            if (length == 0) {
                return 0;
            }
            while (position == chunk.size()) {
                if (!responses.hasNext()) {
                    return -1;
                }
                FetchFilterResponse next = responses.next();
                if (!next.hasChunk()) {
                    throw new IOException("a second header inside the filter's bytes");
                }
                chunk = next.getChunk();
                position = 0;
            }
            int n = Math.min(length, chunk.size() - position);
            chunk.copyTo(into, position, offset, n);
            position += n;
            bytesRead += n;
            return n;
        }

        long bytesRead() {
            return bytesRead;
        }

        boolean hasMore() {
            return position < chunk.size() || responses.hasNext();
        }

        /** Whether the last chunk read holds bytes beyond what was read. */
        boolean chunkLeft() {
            return position < chunk.size();
        }
    }

    @Override
    public List<ShardStatus> describeShards(String table) {
        ensureOpen();
        DescribeShardsRequest request = DescribeShardsRequest.newBuilder().setTable(table).build();
        List<ShardStatus> result = new ArrayList<>();
        for (DescribeShardsResponse response :
                onEveryNode(
                        () -> "DescribeShards(" + table + ")",
                        table,
                        stub -> stub.describeShards(request))) {
            for (io.taishan.kv.proto.ShardStatus s : response.getShardsList()) {
                result.add(ProtoConversions.shard(table, s));
            }
        }
        result.sort(Comparator.comparingInt(ShardStatus::shard));
        return result;
    }

    @Override
    public TableExpiry describeExpiry(String table) {
        ensureOpen();
        DescribeShardsRequest request = DescribeShardsRequest.newBuilder().setTable(table).build();
        List<TtlState> states = new ArrayList<>();
        long expired = 0;
        long swept = 0;
        long lastSweep = 0;
        long live = 0;
        int open = 0;
        for (DescribeShardsResponse response :
                onEveryNode(
                        () -> "DescribeShards(" + table + ")",
                        table,
                        stub -> stub.describeShards(request))) {
            io.taishan.kv.proto.TableExpiry e = response.getExpiry();
            if (states.isEmpty()) {
                for (TtlStateSpec spec : e.getStatesList()) {
                    states.add(
                            new TtlState(
                                    spec.getStateId(),
                                    spec.getTtlMillis(),
                                    switch (spec.getLayout()) {
                                        case TTL_MAP_ENTRY -> TtlState.Layout.MAP_ENTRY;
                                        case TTL_LIST -> TtlState.Layout.LIST;
                                        default -> TtlState.Layout.VALUE;
                                    },
                                    spec.getFixedElementBytes()));
                }
            }
            expired += e.getExpiredEntries();
            swept += e.getSweptEntries();
            lastSweep = Math.max(lastSweep, e.getLastSweepMillis());
            live += e.getEstimatedLiveEntries();
            open += e.getOpenShards();
        }
        return new TableExpiry(List.copyOf(states), expired, swept, lastSweep, live, open);
    }

    // ---- cluster

    /**
     * Every node's answer, in node order. A node that does not answer within the attempts is
     * reported with status {@code UNREACHABLE}, one that fails the call with {@code ERROR}: a
     * health check should show a sick node, not throw.
     */
    @Override
    public List<NodeHealth> health() {
        ensureOpen();
        List<KvNode> nodes = router.nodes();
        List<CompletableFuture<NodeHealth>> pending = new ArrayList<>(nodes.size());
        for (KvNode node : nodes) {
            pending.add(
                    caller.callAsync(node, () -> "Health", true, stub -> stub.health(HEALTH))
                            .handle((answer, failure) -> health(node, answer, failure)));
        }
        return awaitAll(pending, null);
    }

    private static NodeHealth health(
            KvNode node, @Nullable HealthResponse answer, @Nullable Throwable failure) {
        if (failure == null) {
            return ProtoConversions.health(node.name(), node.address(), answer);
        }
        String status = failure instanceof KvUnavailableException ? "UNREACHABLE" : "ERROR";
        return new NodeHealth(node.name(), node.address(), node.index(), status);
    }

    @Override
    public KvLimits limits() {
        return limits;
    }

    /** Closes, giving calls in flight up to 5 s to finish; see {@link #close(Duration)}. */
    @Override
    public void close() {
        close(Duration.ofMillis(CLOSE_GRACE_MILLIS));
    }

    @Override
    public void close(Duration grace) {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        retryScheduler.shutdownNow();
        largeReads.shutdownNow();
        refresher.close();
        List<KvNode.Connections> all = connections.all();
        for (KvNode.Connections c : all) {
            c.shutdown();
        }
        long deadline = System.nanoTime() + grace.toNanos();
        try {
            for (KvNode.Connections c : all) {
                if (!c.awaitTermination(deadline)) {
                    c.shutdownNow();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            connections.shutdownNow();
        }
    }

    @Override
    public String toString() {
        return "GrpcKvStore" + nodeAddresses();
    }

    // ---- routing and plumbing

    /** A read on the lease's shard owner's read lane; see {@link RetryingCaller#unary}. */
    private <Q, R> R readShard(
            ShardLease lease,
            MethodDescriptor<Q, R> method,
            Q request,
            Function<? super Q, String> what) {
        ensureOpen();
        KvNode node = router.nodeFor(lease);
        try {
            return caller.unary(node, KvNode.Lane.READ, method, request, true, what);
        } catch (TableNotFoundException | ShardNotOwnedException e) {
            throw refused(lease.table(), e);
        }
    }

    private <R> R callShard(
            String table,
            int shard,
            String rpc,
            boolean idempotent,
            Function<KvServiceBlockingStub, R> call) {
        ensureOpen();
        return callShard(router.nodeFor(table, shard), table, shard, rpc, idempotent, call);
    }

    private <R> R callShard(
            KvNode node,
            String table,
            int shard,
            String rpc,
            boolean idempotent,
            Function<KvServiceBlockingStub, R> call) {
        ensureOpen();
        try {
            return caller.call(node, () -> describe(rpc, table, shard), idempotent, call);
        } catch (TableNotFoundException | ShardNotOwnedException e) {
            throw refused(table, e);
        }
    }

    private <R> List<R> onEveryNode(
            Supplier<String> what,
            String table,
            Function<KvServiceFutureStub, ListenableFuture<R>> call) {
        return onEveryNode(router.nodes(), what, table, call);
    }

    /** The answers in the order of {@code nodes}. */
    private <R> List<R> onEveryNode(
            List<KvNode> nodes,
            Supplier<String> what,
            @Nullable String table,
            Function<KvServiceFutureStub, ListenableFuture<R>> call) {
        List<CompletableFuture<R>> pending = new ArrayList<>(nodes.size());
        for (KvNode node : nodes) {
            pending.add(caller.callAsync(node, what, true, call));
        }
        return awaitAll(pending, table);
    }

    /**
     * What a refusal of the table or of a shard means for this client, returned to be thrown.
     * Either way the cached shard count may be stale (the table was dropped and created again). A
     * node that refuses a shard under a view other than the client's tells that the cluster
     * changed: the view is refreshed in the background, and the failure says so.
     */
    private KvException refused(String table, KvException e) {
        router.forget(table);
        if (!(e instanceof ShardNotOwnedException notOwned)
                || notOwned.nodeView() == null
                || notOwned.nodeView().equals(router.view().fingerprintHex())) {
            return e;
        }
        if (!closed.get()) {
            refresher.refreshLater(e.address());
        }
        return new ShardNotOwnedException(
                e.getMessage()
                        + "; this client routed by view "
                        + router.view().fingerprintHex()
                        + " ("
                        + router.view().nameList()
                        + "): the cluster changed, the client is refreshing its view, and a"
                        + " lease taken under the old view is void where the shard moved: take"
                        + " the shard again (open or restore it)",
                e.address(),
                e,
                notOwned.nodeView());
    }

    /**
     * Runs a call that takes shards (open, restore, clone) once more when it failed because the
     * cluster changed under it (and the refreshed view differs) or because a node lacked the table
     * (a node that joined after the table was created: it gets the table first). Safe: a node
     * refuses such a call whole, before it changes anything; and a part another node carried out is
     * taken again, which only fences leases nobody was given.
     */
    private <T> T takingShards(String table, Supplier<T> call) {
        long before = router.view().fingerprint();
        try {
            return call.get();
        } catch (ShardNotOwnedException e) {
            boolean otherView =
                    e.nodeView() != null && !e.nodeView().equals(router.view().fingerprintHex());
            if (otherView) {
                refresher.refreshNow(e.address());
            }
            // Unchanged: the refusal was about this client's stale shard count, not the cluster.
            if (router.view().fingerprint() == before) {
                throw e;
            }
            return call.get();
        } catch (TableNotFoundException e) {
            if (!createWhereMissing(table)) {
                throw e;
            }
            return call.get();
        } catch (KvUnavailableException e) {
            if (!viewChangedAfter(e, before)) {
                throw e;
            }
            return call.get();
        }
    }

    /**
     * Whether the cluster's view is no longer {@code before}, asking the cluster after a node could
     * not be reached. A node replaced at a new address, or removed, refuses nothing: its old
     * address just does not answer, and a client that waited for a refusal would route the shards
     * there forever (a job failing over again and again with the same client). Only when the
     * connection failed (not a deadline: a hung node would hold the refresh as long again) and the
     * view has other nodes to ask; a refresh that fails is added to {@code e}.
     */
    private boolean viewChangedAfter(KvUnavailableException e, long before) {
        if (router.view().fingerprint() != before) {
            return true;
        }
        if (closed.get()
                || router.nodes().size() < 2
                || Status.fromThrowable(e).getCode() != Status.Code.UNAVAILABLE) {
            return false;
        }
        try {
            return refresher.refreshNow(null);
        } catch (KvException refresh) {
            e.addSuppressed(refresh);
            return false;
        }
    }

    /**
     * Creates the table on every node that lacks it, with the shard count a node that has it
     * reports; false when no node has it.
     */
    private boolean createWhereMissing(String table) {
        Optional<TableInfo> existing = describeTable(table);
        if (existing.isEmpty()) {
            return false;
        }
        CreateTableRequest request =
                CreateTableRequest.newBuilder()
                        .setName(table)
                        .setShardCount(existing.get().shardCount())
                        .setIfNotExists(true)
                        .build();
        for (KvNode node : router.nodes()) {
            caller.call(
                    node,
                    () -> "CreateTable(" + table + ", " + request.getShardCount() + ")",
                    false,
                    stub -> stub.createTable(request));
        }
        return true;
    }

    private static List<SnapshotInfo> snapshotsOf(List<ListSnapshotsResponse> responses) {
        List<SnapshotInfo> result = new ArrayList<>();
        for (ListSnapshotsResponse response : responses) {
            for (io.taishan.kv.proto.SnapshotInfo s : response.getSnapshotsList()) {
                result.add(ProtoConversions.snapshot(s));
            }
        }
        return result;
    }

    private <R> List<R> awaitAll(List<CompletableFuture<R>> pending, @Nullable String table) {
        await(
                CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0])),
                table == null ? "cluster call" : "call on table '" + table + "'");
        return joinAll(pending, table);
    }

    /** The results of completed futures, or the first failure with the others suppressed. */
    private <R> List<R> joinAll(List<CompletableFuture<R>> done, @Nullable String table) {
        List<R> results = new ArrayList<>(done.size());
        RuntimeException first = null;
        for (CompletableFuture<R> future : done) {
            try {
                results.add(future.join());
            } catch (CompletionException e) {
                RuntimeException failure = unwrap(e.getCause());
                if (first == null) {
                    first = failure;
                } else if (failure != first) {
                    first.addSuppressed(failure);
                }
            }
        }
        if (first != null) {
            if (table != null
                    && (first instanceof TableNotFoundException
                            || first instanceof ShardNotOwnedException)) {
                throw refused(table, (KvException) first);
            }
            throw first;
        }
        return results;
    }

    private static <R> R await(CompletableFuture<R> future, String what) {
        try {
            return future.get();
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KvException(
                    ErrorCode.ERROR_CODE_UNSPECIFIED,
                    "interrupted while waiting for " + what + " (it may still complete)",
                    null,
                    e);
        }
    }

    private static RuntimeException unwrap(Throwable failure) {
        if (failure instanceof RuntimeException runtime) {
            return runtime;
        }
        return new KvException(
                ErrorCode.ERROR_CODE_UNSPECIFIED, String.valueOf(failure), null, failure);
    }

    private static ShardRef shardRef(ShardLease lease) {
        return ShardRef.newBuilder().setShard(lease.shard()).setEpoch(lease.epoch()).build();
    }

    private static String describe(String rpc, String table, int shard) {
        return rpc + "(table " + table + ", shard " + shard + ")";
    }

    private static String describeGet(GetRequest request) {
        return describe("Get", request.getTable(), request.getShard().getShard());
    }

    /** Every request {@link #multiGet} sends holds keys of one shard. */
    private static String describeMultiGet(MultiGetRequest request) {
        int shard = request.getKeysCount() == 0 ? -1 : request.getKeys(0).getShard().getShard();
        return describe("MultiGet", request.getTable(), shard);
    }

    private static String describeScan(ScanRequest request) {
        return describe("Scan", request.getTable(), request.getShard().getShard());
    }

    private static String describeWrite(WriteRequest request) {
        StringBuilder sb = new StringBuilder("Write(table ").append(request.getTable());
        sb.append(", shards ");
        int shown = Math.min(request.getShardsCount(), 8);
        for (int i = 0; i < shown; i++) {
            sb.append(i == 0 ? "" : ",").append(request.getShards(i).getShard());
        }
        if (request.getShardsCount() > shown) {
            sb.append(",... (").append(request.getShardsCount()).append(" shards)");
        }
        return sb.append(')').toString();
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException("this GrpcKvStore is closed");
        }
    }
}
