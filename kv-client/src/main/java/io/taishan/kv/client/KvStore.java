package io.taishan.kv.client;

import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.protocol.ScanRange;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import javax.annotation.Nullable;

/**
 * The Taishan KV service as the state backend sees it: tables of fixed shard count, shard ownership
 * by epoch, reads and ordered batched writes per shard, and per-shard snapshots. {@link
 * KvStores#connect} gives the gRPC implementation.
 *
 * <p>Abilities that not every implementation has are facets, as in Caffeine's {@code Policy}:
 * {@link #filters()}, {@link #ttl()} and {@link #admin()} answer empty unless the store has them,
 * so a decorator passes on (and can meter) each one, and no caller needs to cast.
 *
 * <p>Every method may throw a {@link KvException}; the subclasses name the cases a caller can act
 * on ({@link TableNotFoundException}, {@link FencedException}, {@link SnapshotNotFoundException},
 * {@link KvUnavailableException}, ...). Implementations are thread-safe.
 */
public interface KvStore extends AutoCloseable {

    // ---- tables

    /** Creates the table; fails with {@link TableExistsException} if it exists. */
    TableInfo createTable(String name, int shardCount);

    /**
     * Creates the table unless it exists with the same shard count; a different shard count fails
     * with {@link TableExistsException}.
     */
    TableInfo createTableIfAbsent(String name, int shardCount);

    Optional<TableInfo> describeTable(String name);

    List<TableInfo> listTables();

    /** Drops the table with all its shards and snapshots; fails if it does not exist. */
    void dropTable(String name);

    // ---- ownership

    /** Takes ownership of a shard: every lease handed out before for it is fenced from now on. */
    ShardLease openShard(String table, int shard);

    /**
     * Takes ownership of many shards of one table for one {@code writer} (any name unique to the
     * caller, e.g. a random id per state backend), in one call per node: the shards a writer starts
     * empty share a store on the node, which its checkpoints then cut at once. A shard without
     * data, and every one with {@code wipe}, starts empty (with {@code wipe} its unpinned snapshots
     * are dropped too); a shard with data otherwise keeps it.
     *
     * @return the leases, in the order of {@code shards}
     */
    List<ShardLease> openShards(String table, int[] shards, String writer, boolean wipe);

    /**
     * Takes many shards of one table for one {@code writer} from snapshots, of this table (a
     * rollback) or of others with the same shard count (a clone), in one call per node: every
     * snapshot is checked to exist first ({@link SnapshotNotFoundException} naming the missing
     * ones, nothing changed), then the shards are re-pointed at them, no data copied. Shards not
     * named are never touched, whoever owns them. The unpinned snapshots of a rolled-back shard
     * above the one restored, and all of a cloned shard's, are dropped.
     *
     * @return the leases, in the order of {@code restores}
     */
    List<ShardLease> restoreShards(String table, String writer, List<ShardRestore> restores);

    // ---- reads

    /** The value, or null when the key is absent. */
    @Nullable
    byte[] get(ShardLease lease, byte[] key);

    /** The values (null where absent) of keys of one shard, in one round trip per node. */
    List<byte[]> multiGet(ShardLease lease, List<byte[]> keys);

    /**
     * The values (null where absent) of keys of any shards of one table, {@code leases.get(i)}
     * holding {@code keys.get(i)}, without waiting: one MultiGet per kv-server node (more where one
     * would exceed the server's limits), all in flight at once. The future completes on a client
     * thread, or fails as {@link #multiGet} would throw. A value too large for a MultiGet answer is
     * read by a stream of its own before the future completes.
     */
    CompletableFuture<List<byte[]>> multiGetAsync(List<ShardLease> leases, List<byte[]> keys);

    /**
     * The entries of a range in unsigned byte order, fetched page by page ({@code pageSize} entries
     * at most per round trip; 0 for the server's limit), so memory stays bounded.
     */
    CloseableIterator<KvEntry> scan(
            ShardLease lease, ScanRange range, int pageSize, boolean keysOnly);

    /**
     * One scan of {@link #firstPages}: a range of one leased shard, at most {@code limit} entries.
     */
    record PageQuery(ShardLease lease, ScanRange range, int limit, boolean keysOnly) {}

    /** The first page of a scan; {@code hasMore} when the range holds more entries than it. */
    record Page(List<KvEntry> entries, boolean hasMore) {}

    /**
     * The first page of each scan (all of one table), in one call per node: what a subtask that
     * restored many shards needs of each (the heads of its timer queues), without a call per shard.
     * A page is null where the node's answer reached its size bound: scan that one on its own.
     */
    List<Page> firstPages(List<PageQuery> queries);

    // ---- writes

    /** Applies the batch; returns once every touched shard has applied it. */
    WriteResult write(WriteBatch batch);

    /** {@link #write} without blocking the caller. Never retried: append is not idempotent. */
    CompletableFuture<WriteResult> writeAsync(WriteBatch batch);

    // ---- snapshots

    /** A durable snapshot of each leased shard (all of one table), tagged {@code snapshotId}. */
    List<SnapshotInfo> snapshot(List<ShardLease> shards, long snapshotId, boolean pinned);

    /** Rolls the live shard back to the snapshot and returns a new lease on it. */
    ShardLease restore(String table, int shard, long snapshotId);

    /**
     * Starts {@code targetTable}'s shard (the table must exist with the same shard count) from a
     * snapshot of {@code sourceTable}'s, and returns a lease on it; the source is untouched.
     */
    ShardLease cloneShard(String sourceTable, int shard, long snapshotId, String targetTable);

    /** Every snapshot of every shard of the table. */
    List<SnapshotInfo> listSnapshots(String table);

    List<SnapshotInfo> listSnapshots(String table, int shard);

    /** Drops one snapshot, pinned or not; false if it did not exist. */
    boolean dropSnapshot(String table, int shard, long snapshotId);

    /**
     * Drops snapshot {@code snapshotId} of every one of {@code shards}, pinned or not, in one call
     * per node; returns how many existed.
     */
    int dropSnapshot(String table, int[] shards, long snapshotId);

    /** Drops every unpinned snapshot of the table with an id below {@code snapshotId}. */
    int dropSnapshotsBelow(String table, long snapshotId);

    // ---- cluster

    /** The health of every node. */
    List<NodeHealth> health();

    /** The limits the servers enforce. */
    KvLimits limits();

    @Override
    void close();

    // ---- facets

    /** The server's Bloom filters of leased shards, if this store can fetch them. */
    default Optional<Filters> filters() {
        return Optional.empty();
    }

    /** Server-side expiry of TTL'd state, if this store can drive it. */
    default Optional<Ttl> ttl() {
        return Optional.empty();
    }

    /** What operators and tools need beyond the data path, if this store offers it. */
    default Optional<Admin> admin() {
        return Optional.empty();
    }

    /** Snapshots copied to and restored from Flink's checkpoint storage, if this store can. */
    default Optional<Durable> durable() {
        return Optional.empty();
    }

    /**
     * The server's Bloom filters of leased shards: what a client-side {@code LoadingFilter}
     * (taishan-bloom) loads.
     *
     * <p>How a client keeps its copy right (the rest is {@code LoadingFilter}'s protocol): call
     * {@code beginLoad()} first, then {@link #fetchFilter}; for a re-fetch, send it only after the
     * writes made before {@code beginLoad()} were acknowledged, since the server's copy contains
     * exactly the writes it acknowledged before the fetch arrived (and possibly some concurrent
     * ones). The server reports its filter version with every write ({@link
     * WriteResult#filterVersion}); a version other than the loaded one means it rebuilt, and a
     * fetch gives a more precise copy. The old copy stays correct.
     */
    interface Filters {

        /**
         * A copy of the shard's current filter and its version; blocking, with the client's
         * deadline and retries of an idempotent read. The caller owns the returned filter (off-heap
         * memory).
         *
         * @throws FilterUnavailableException while the server has no filter it can vouch for (not
         *     retried: try again later)
         * @throws FencedException if the lease is stale
         * @throws KvException for the other failures of a data call
         */
        ShardFilter fetchFilter(ShardLease lease);

        /**
         * Copies of the filters of many leased shards of one table, as {@link #fetchFilter} each,
         * but with one call per node for hundreds of shards: what a restore of thousands of shards
         * needs. Blocking; never throws for a shard: each shard's filter or the reason it has none
         * is in the result. The default fetches one by one.
         *
         * @throws IllegalArgumentException if the leases name more than one table, or a shard twice
         */
        default FilterBatch fetchFilters(List<ShardLease> leases) {
            Map<Integer, ShardFilter> filters = new HashMap<>();
            Map<Integer, KvException> failures = new HashMap<>();
            FilterBatch.checkLeases(leases);
            for (ShardLease lease : leases) {
                try {
                    filters.put(lease.shard(), fetchFilter(lease));
                } catch (KvException e) {
                    failures.put(lease.shard(), e);
                }
            }
            return new FilterBatch(filters, failures);
        }
    }

    /**
     * Server-side expiry of TTL'd state: a backend tells the server which of its table's states
     * have a TTL, and keeps reporting its TTL clock for the shards it owns; the server deletes
     * expired entries in the background by that clock, never its own.
     */
    interface Ttl {

        /** Registers states with a TTL on every node (idempotent; a longer TTL wins). */
        void registerTtlStates(String table, List<TtlState> states);

        /**
         * Reports the owner's TTL time for its shards (all of one table); fails with {@link
         * FencedException} for a stale lease.
         */
        CompletableFuture<Void> reportTtlTime(List<ShardLease> leases, long ttlTimeMillis);
    }

    /**
     * Snapshots that outlive the node's disk: the cuts holding a checkpoint's snapshots copied into
     * Flink's checkpoint storage by the nodes themselves (never through the caller), and restores
     * that fetch from there what a node does not hold.
     *
     * <p>The caller owns the copies' lifecycle (Flink's JobManager deletes them through its shared
     * state registry); a node never deletes a copy it reported. Which copies an upload may reuse is
     * the caller's rule: only those of the last checkpoint Flink confirmed, none for a full
     * checkpoint or a savepoint.
     */
    interface Durable {

        /**
         * Copies into checkpoint storage the cuts that hold snapshot {@code snapshotId} of the
         * shards, one call per node they live on, the nodes in parallel; blocking until every file
         * is durable.
         *
         * @param sharedDir Flink's shared state directory of the job: the data files' copies
         * @param exclusiveDir the checkpoint's own directory: the metadata packs
         * @param reusablePaths copies that may be referenced instead of written again
         * @throws SnapshotNotFoundException if a shard does not hold the snapshot
         * @throws KvException with {@code DURABLE_DISABLED} on a node without {@code
         *     durable.enabled}, {@code STORAGE_ERROR} naming the file and cause when the storage
         *     failed (the failed node deleted what it wrote, and the calls still running on other
         *     nodes are cancelled, so they delete theirs)
         * @throws DurableUploadFailedException as those, when some nodes had finished: it names
         *     their cuts, whose new copies the caller deletes
         */
        DurableSnapshot uploadSnapshot(
                String table,
                long snapshotId,
                int[] shards,
                String sharedDir,
                String exclusiveDir,
                Set<String> reusablePaths);

        /**
         * As {@link KvStore#restoreShards}, where a node that does not hold a shard's snapshot
         * fetches the cut the restore names ({@link ShardRestore#durableCutId}) from {@code cuts}.
         * A snapshot a node holds is taken from its disk: nothing is downloaded then. Each node is
         * sent only the cuts its shards name.
         *
         * @throws IllegalArgumentException if a restore names a cut that {@code cuts} lacks
         * @throws KvException with {@code DURABLE_DISABLED} when a node lacks a snapshot and has no
         *     checkpoint storage, {@code STORAGE_ERROR} naming the copy when one is missing or not
         *     as recorded (the node's shards are then as they were)
         */
        DurableRestore restoreShards(
                String table, String writer, List<ShardRestore> restores, List<DurableCut> cuts);
    }

    /** What operators and tools need beyond the data path: the cluster's layout and state. */
    interface Admin {

        /**
         * The nodes in the order of {@link #clusterView()} (by name), as this client reaches them.
         */
        List<String> nodeAddresses();

        /**
         * The view of the cluster this client routes by now: every node by name and address, and
         * the view's fingerprint. It changes when a node refused a shard under another view and the
         * nodes agree on that one.
         */
        ClusterView clusterView();

        /**
         * Per node of the view, the shards of the table it holds but does not own under its view:
         * left behind when the cluster's nodes changed (their data and snapshots stay there,
         * unused). One call per node.
         */
        List<UnownedShards> unownedShards(String table);

        /**
         * Every shard of the table that some node has touched, with its epoch, filter state and
         * last activity, in shard order (one call per node).
         */
        List<ShardStatus> describeShards(String table);

        /** The table's server-side expiry, summed over the nodes. */
        TableExpiry describeExpiry(String table);

        /**
         * Closes the store, giving calls in flight up to {@code grace} to finish before they are
         * cancelled. A caller that has nothing left in flight it cares about (a state backend after
         * its own drain) passes {@link Duration#ZERO}: a hung server then cannot hold the close.
         */
        void close(Duration grace);
    }
}
