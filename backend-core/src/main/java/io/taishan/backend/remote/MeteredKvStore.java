package io.taishan.backend.remote;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableRestore;
import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.FilterBatch;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.NodeHealth;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.client.ShardStatus;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableExpiry;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.client.TtlState;
import io.taishan.kv.client.UnownedShards;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.client.WriteResult;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.protocol.ScanRange;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.ThreadSafeSimpleCounter;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;

/**
 * Counts the calls one subtask makes to the store, by kind, with their latency, under the
 * operator's {@code taishan.rpc.<kind>} metric group ({@code count}, {@code errors}, {@code
 * latencyMicros}): every call, the filter fetches, the TTL calls and the uploads and restores to
 * and from checkpoint storage of its facets included. A scan counts once when opened; its later
 * pages are not timed. Closing it does not close the shared store, nor does its admin facet's
 * close.
 */
public final class MeteredKvStore implements KvStore {
    /** The kinds of call, as reported. */
    enum Kind {
        GET,
        MULTI_GET,
        SCAN,
        WRITE,
        SNAPSHOT,
        OPEN_SHARD,
        RESTORE,
        CLONE,
        DROP_SNAPSHOTS,
        TABLE,
        FETCH_FILTER,
        FETCH_FILTERS,
        TTL,
        UPLOAD_SNAPSHOT
    }

    private final KvStore delegate;
    private final Map<Kind, Meter> meters = new EnumMap<>(Kind.class);

    public MeteredKvStore(KvStore delegate, MetricGroup group) {
        this.delegate = delegate;
        MetricGroup rpc = group.addGroup("rpc");
        for (Kind kind : Kind.values()) {
            meters.put(kind, new Meter(rpc.addGroup(kind.name().toLowerCase())));
        }
    }

    private <T> T timed(Kind kind, Supplier<T> call) {
        Meter meter = meters.get(kind);
        long start = System.nanoTime();
        try {
            return call.get();
        } catch (RuntimeException e) {
            meter.errors.inc();
            throw e;
        } finally {
            meter.count.inc();
            long micros = (System.nanoTime() - start) / 1_000;
            // Calls come from the task thread, the restore pool and housekeeping at once.
            synchronized (meter) {
                meter.latencyMicros.update(micros);
            }
        }
    }

    @Override
    public TableInfo createTable(String name, int shardCount) {
        return timed(Kind.TABLE, () -> delegate.createTable(name, shardCount));
    }

    @Override
    public TableInfo createTableIfAbsent(String name, int shardCount) {
        return timed(Kind.TABLE, () -> delegate.createTableIfAbsent(name, shardCount));
    }

    @Override
    public Optional<TableInfo> describeTable(String name) {
        return timed(Kind.TABLE, () -> delegate.describeTable(name));
    }

    @Override
    public List<TableInfo> listTables() {
        return timed(Kind.TABLE, delegate::listTables);
    }

    @Override
    public void dropTable(String name) {
        timed(
                Kind.TABLE,
                () -> {
                    delegate.dropTable(name);
                    return null;
                });
    }

    @Override
    public ShardLease openShard(String table, int shard) {
        return timed(Kind.OPEN_SHARD, () -> delegate.openShard(table, shard));
    }

    @Override
    public List<ShardLease> openShards(String table, int[] shards, String writer, boolean wipe) {
        return timed(Kind.OPEN_SHARD, () -> delegate.openShards(table, shards, writer, wipe));
    }

    @Override
    public byte[] get(ShardLease lease, byte[] key) {
        return timed(Kind.GET, () -> delegate.get(lease, key));
    }

    @Override
    public List<byte[]> multiGet(ShardLease lease, List<byte[]> keys) {
        return timed(Kind.MULTI_GET, () -> delegate.multiGet(lease, keys));
    }

    @Override
    public CompletableFuture<List<byte[]>> multiGetAsync(
            List<ShardLease> leases, List<byte[]> keys) {
        return timedAsync(Kind.MULTI_GET, () -> delegate.multiGetAsync(leases, keys));
    }

    @Override
    public CloseableIterator<KvEntry> scan(
            ShardLease lease, ScanRange range, int pageSize, boolean keysOnly) {
        return timed(Kind.SCAN, () -> delegate.scan(lease, range, pageSize, keysOnly));
    }

    @Override
    public List<Page> firstPages(List<PageQuery> queries) {
        return timed(Kind.SCAN, () -> delegate.firstPages(queries));
    }

    @Override
    public WriteResult write(WriteBatch batch) {
        return timed(Kind.WRITE, () -> delegate.write(batch));
    }

    @Override
    public CompletableFuture<WriteResult> writeAsync(WriteBatch batch) {
        return timedAsync(Kind.WRITE, () -> delegate.writeAsync(batch));
    }

    /** Times an asynchronous call from its start until its future completes. */
    private <T> CompletableFuture<T> timedAsync(Kind kind, Supplier<CompletableFuture<T>> call) {
        Meter meter = meters.get(kind);
        long start = System.nanoTime();
        return call.get()
                .whenComplete(
                        (result, error) -> {
                            if (error != null) {
                                meter.errors.inc();
                            }
                            meter.count.inc();
                            long micros = (System.nanoTime() - start) / 1_000;
                            synchronized (meter) {
                                meter.latencyMicros.update(micros);
                            }
                        });
    }

    @Override
    public List<SnapshotInfo> snapshot(List<ShardLease> shards, long snapshotId, boolean pinned) {
        return timed(Kind.SNAPSHOT, () -> delegate.snapshot(shards, snapshotId, pinned));
    }

    @Override
    public ShardLease restore(String table, int shard, long snapshotId) {
        return timed(Kind.RESTORE, () -> delegate.restore(table, shard, snapshotId));
    }

    @Override
    public ShardLease cloneShard(
            String sourceTable, int shard, long snapshotId, String targetTable) {
        return timed(
                Kind.CLONE, () -> delegate.cloneShard(sourceTable, shard, snapshotId, targetTable));
    }

    @Override
    public List<ShardLease> restoreShards(
            String table, String writer, List<ShardRestore> restores) {
        return timed(Kind.RESTORE, () -> delegate.restoreShards(table, writer, restores));
    }

    @Override
    public List<SnapshotInfo> listSnapshots(String table) {
        return timed(Kind.SNAPSHOT, () -> delegate.listSnapshots(table));
    }

    @Override
    public List<SnapshotInfo> listSnapshots(String table, int shard) {
        return timed(Kind.SNAPSHOT, () -> delegate.listSnapshots(table, shard));
    }

    @Override
    public boolean dropSnapshot(String table, int shard, long snapshotId) {
        return timed(Kind.DROP_SNAPSHOTS, () -> delegate.dropSnapshot(table, shard, snapshotId));
    }

    @Override
    public int dropSnapshot(String table, int[] shards, long snapshotId) {
        return timed(Kind.DROP_SNAPSHOTS, () -> delegate.dropSnapshot(table, shards, snapshotId));
    }

    @Override
    public int dropSnapshotsBelow(String table, long snapshotId) {
        return timed(Kind.DROP_SNAPSHOTS, () -> delegate.dropSnapshotsBelow(table, snapshotId));
    }

    @Override
    public List<NodeHealth> health() {
        return delegate.health();
    }

    @Override
    public KvLimits limits() {
        return delegate.limits();
    }

    /** The shared store stays open for the other subtasks. */
    @Override
    public void close() {}

    @Override
    public Optional<Filters> filters() {
        return delegate.filters().map(MeteredFilters::new);
    }

    @Override
    public Optional<Ttl> ttl() {
        return delegate.ttl().map(MeteredTtl::new);
    }

    @Override
    public Optional<Admin> admin() {
        return delegate.admin().map(MeteredAdmin::new);
    }

    @Override
    public Optional<Durable> durable() {
        return delegate.durable().map(MeteredDurable::new);
    }

    private final class MeteredDurable implements Durable {
        private final Durable durable;

        MeteredDurable(Durable durable) {
            this.durable = durable;
        }

        @Override
        public DurableSnapshot uploadSnapshot(
                String table,
                long snapshotId,
                int[] shards,
                String sharedDir,
                String exclusiveDir,
                Set<String> reusablePaths) {
            return timed(
                    Kind.UPLOAD_SNAPSHOT,
                    () ->
                            durable.uploadSnapshot(
                                    table,
                                    snapshotId,
                                    shards,
                                    sharedDir,
                                    exclusiveDir,
                                    reusablePaths));
        }

        @Override
        public DurableRestore restoreShards(
                String table, String writer, List<ShardRestore> restores, List<DurableCut> cuts) {
            return timed(Kind.RESTORE, () -> durable.restoreShards(table, writer, restores, cuts));
        }
    }

    private final class MeteredFilters implements Filters {
        private final Filters filters;

        MeteredFilters(Filters filters) {
            this.filters = filters;
        }

        @Override
        public ShardFilter fetchFilter(ShardLease lease) {
            return timed(Kind.FETCH_FILTER, () -> filters.fetchFilter(lease));
        }

        @Override
        public FilterBatch fetchFilters(List<ShardLease> leases) {
            return timed(Kind.FETCH_FILTERS, () -> filters.fetchFilters(leases));
        }
    }

    private final class MeteredTtl implements Ttl {
        private final Ttl ttl;

        MeteredTtl(Ttl ttl) {
            this.ttl = ttl;
        }

        @Override
        public void registerTtlStates(String table, List<TtlState> states) {
            timed(
                    Kind.TTL,
                    () -> {
                        ttl.registerTtlStates(table, states);
                        return null;
                    });
        }

        @Override
        public CompletableFuture<Void> reportTtlTime(List<ShardLease> leases, long ttlTimeMillis) {
            return timedAsync(Kind.TTL, () -> ttl.reportTtlTime(leases, ttlTimeMillis));
        }
    }

    private final class MeteredAdmin implements Admin {
        private final Admin admin;

        MeteredAdmin(Admin admin) {
            this.admin = admin;
        }

        @Override
        public List<String> nodeAddresses() {
            return admin.nodeAddresses();
        }

        @Override
        public ClusterView clusterView() {
            return admin.clusterView();
        }

        @Override
        public List<UnownedShards> unownedShards(String table) {
            return timed(Kind.TABLE, () -> admin.unownedShards(table));
        }

        @Override
        public List<ShardStatus> describeShards(String table) {
            return timed(Kind.TABLE, () -> admin.describeShards(table));
        }

        @Override
        public TableExpiry describeExpiry(String table) {
            return timed(Kind.TABLE, () -> admin.describeExpiry(table));
        }

        /** The shared store stays open for the other subtasks. */
        @Override
        public void close(Duration grace) {}
    }

    private static final class Meter {
        final Counter count = new ThreadSafeSimpleCounter();
        final Counter errors = new ThreadSafeSimpleCounter();
        final Histogram latencyMicros = new DescriptiveStatisticsHistogram(1024);

        Meter(MetricGroup group) {
            group.counter("count", count);
            group.counter("errors", errors);
            group.histogram("latencyMicros", latencyMicros);
        }
    }
}
