package io.taishan.backend;

import io.taishan.backend.flink.StateTracking;
import io.taishan.backend.flink.TaishanKeyedStateBackendBuilderBase;
import io.taishan.backend.read.BatchedReads;
import io.taishan.backend.read.CacheMemory;
import io.taishan.backend.read.FilterLoader;
import io.taishan.backend.read.ReadCache;
import io.taishan.backend.read.ReadMetrics;
import io.taishan.backend.read.ReadPathConfig;
import io.taishan.backend.read.ReadPathUpdates;
import io.taishan.backend.read.ShardFilters;
import io.taishan.backend.read.StateReader;
import io.taishan.backend.remote.MeteredKvStore;
import io.taishan.backend.remote.SharedKvStores;
import io.taishan.backend.restore.CanonicalSavepointRestore;
import io.taishan.backend.restore.TaishanRestoreOperation;
import io.taishan.backend.snapshot.BackendMetrics;
import io.taishan.backend.snapshot.ReusableCopies;
import io.taishan.backend.ttl.ServerSideExpiry;
import io.taishan.backend.write.StateWriter;
import io.taishan.backend.write.WriteBatchQueue;
import io.taishan.backend.write.WriteQueueConfig;
import io.taishan.cache.CacheType;
import io.taishan.cache.StateCacheRegistry;
import io.taishan.kv.client.AuthenticationException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.TableInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.annotation.Nonnull;
import javax.annotation.Nullable;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.memory.MemoryManager;
import org.apache.flink.runtime.query.TaskKvStateRegistry;
import org.apache.flink.runtime.state.BackendBuildingException;
import org.apache.flink.runtime.state.HeapPriorityQueuesManager;
import org.apache.flink.runtime.state.InternalKeyContextImpl;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StreamCompressionDecorator;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.IOUtils;

/**
 * Builds a {@link TaishanKeyedStateBackend}: connects, creates the operator's table if needed,
 * restores the owned shards from the handles' manifests, and starts the write queue.
 */
final class TaishanKeyedStateBackendBuilder<K> extends TaishanKeyedStateBackendBuilderBase<K> {
    private final KvClientConfig clientConfig;
    private final String table;
    private final WriteQueueConfig writeQueueConfig;
    private final ReadPathConfig readPathConfig;
    @Nullable private final MemoryManager memoryManager;
    private final double managedMemoryFraction;
    private final TaishanOptions.TimerServiceType timerService;
    private final int timerCacheSize;
    private final Duration ttlClockReportInterval;
    private final boolean durableCheckpoints;
    @Nullable private final MetricGroup metricGroup;

    TaishanKeyedStateBackendBuilder(
            TaskKvStateRegistry kvStateRegistry,
            TypeSerializer<K> keySerializer,
            ClassLoader userCodeClassLoader,
            int numberOfKeyGroups,
            KeyGroupRange keyGroupRange,
            ExecutionConfig executionConfig,
            TtlTimeProvider ttlTimeProvider,
            StateTracking stateTracking,
            @Nonnull Collection<KeyedStateHandle> stateHandles,
            StreamCompressionDecorator keyGroupCompressionDecorator,
            CloseableRegistry cancelStreamRegistry,
            KvClientConfig clientConfig,
            String table,
            WriteQueueConfig writeQueueConfig,
            ReadPathConfig readPathConfig,
            @Nullable MemoryManager memoryManager,
            double managedMemoryFraction,
            TaishanOptions.TimerServiceType timerService,
            int timerCacheSize,
            Duration ttlClockReportInterval,
            boolean durableCheckpoints,
            @Nullable MetricGroup metricGroup) {
        super(
                kvStateRegistry,
                keySerializer,
                userCodeClassLoader,
                numberOfKeyGroups,
                keyGroupRange,
                executionConfig,
                ttlTimeProvider,
                stateTracking,
                stateHandles,
                keyGroupCompressionDecorator,
                cancelStreamRegistry);
        this.clientConfig = clientConfig;
        this.table = table;
        this.writeQueueConfig = writeQueueConfig;
        this.readPathConfig = readPathConfig;
        this.memoryManager = memoryManager;
        this.managedMemoryFraction = managedMemoryFraction;
        this.timerService = timerService;
        this.timerCacheSize = timerCacheSize;
        this.ttlClockReportInterval = ttlClockReportInterval;
        this.durableCheckpoints = durableCheckpoints;
        this.metricGroup = metricGroup;
    }

    @Override
    public TaishanKeyedStateBackend<K> build() throws BackendBuildingException {
        long start = System.nanoTime();
        SharedKvStores.Handle connection = null;
        WriteBatchQueue queue = null;
        CacheMemory cacheMemory = null;
        ShardFilters filters = null;
        FilterLoader filterLoader = null;
        boolean createdTable = false;
        // The registry passed in serves the restore only: Flink closes it once the backend is
        // built, so the backend's snapshots need their own (as in Flink's RocksDB builder).
        CloseableRegistry cancelStreamRegistryForBackend = new CloseableRegistry();
        try {
            boolean canonical = TaishanRestoreOperation.isCanonicalSavepoint(restoreStateHandles);
            TaishanRestoreOperation.Manifests manifests =
                    canonical
                            ? TaishanRestoreOperation.Manifests.none()
                            : new TaishanRestoreOperation<>(
                                            restoreStateHandles,
                                            keyGroupRange,
                                            keySerializerProvider,
                                            userCodeClassLoader,
                                            cancelStreamRegistry)
                                    .readManifests();

            connection = connect();
            MetricGroup taishanGroup = metricGroup == null ? null : metricGroup.addGroup("taishan");
            KvStore store =
                    taishanGroup == null
                            ? connection.store()
                            : new MeteredKvStore(connection.store(), taishanGroup);
            Optional<TableInfo> existing = store.describeTable(table);
            boolean newTable = existing.isEmpty();
            if (newTable || existing.get().shardCount() != numberOfKeyGroups) {
                // Creates it, or fails naming both shard counts.
                store.createTableIfAbsent(table, numberOfKeyGroups);
            }
            createdTable = newTable;
            List<Integer> unrestored = new ArrayList<>();
            // Names this backend on the kv-server: the shards it starts empty share one store,
            // which its checkpoints cut at once.
            String writerName = table + "/" + keyGroupRange + "/" + UUID.randomUUID();
            TaishanRestoreOperation.TakenShards taken =
                    TaishanRestoreOperation.takeShards(
                            store,
                            table,
                            writerName,
                            newTable,
                            keyGroupRange,
                            manifests,
                            unrestored);
            ShardLease[] leases = taken.leases();

            // The read path's layers exist before the first write, so each sees every write.
            queue =
                    new WriteBatchQueue(
                            store, table, writeQueueConfig, connection.scheduler(), taishanGroup);
            cacheMemory =
                    CacheMemory.acquire(
                            readPathConfig,
                            StateCacheRegistry.shared(),
                            memoryManager,
                            managedMemoryFraction);
            ReadCache cache =
                    new ReadCache(
                            cacheMemory.handle(),
                            keyGroupRange.getStartKeyGroup(),
                            keyGroupRange.getNumberOfKeyGroups(),
                            ttlTimeProvider);
            // Empty: opened without a snapshot (new, or started empty by the server). Not a cloned
            // shard of a new table: it holds another job's snapshot.
            Set<Integer> opened = new HashSet<>(unrestored);
            filters =
                    new ShardFilters(
                            keyGroupRange.getStartKeyGroup(),
                            keyGroupRange.getNumberOfKeyGroups(),
                            numberOfKeyGroups,
                            opened::contains,
                            readPathConfig.bloomFilterEnabled());
            BatchedReads batched = new BatchedReads();
            StateWriter writer =
                    new StateWriter(queue, new ReadPathUpdates(cache, filters, batched));
            ReadMetrics readMetrics =
                    ReadMetrics.register(taishanGroup, cacheMemory.handle(), filters);
            StateReader reader =
                    new StateReader(store, queue, cache, filters, readMetrics, batched);
            if (readPathConfig.bloomFilterEnabled() && store.filters().isPresent()) {
                Map<Integer, ShardLease> byShard = new HashMap<>();
                for (ShardLease lease : leases) {
                    byShard.put(lease.shard(), lease);
                }
                filterLoader =
                        new FilterLoader(
                                store.filters().get(),
                                filters,
                                queue,
                                connection.filterFetches(),
                                byShard);
                queue.setAcknowledgementListener(filterLoader::acknowledged);
                filters.onFalsePositive(filterLoader::falsePositive);
                if (taishanGroup != null) {
                    FilterLoader loader = filterLoader;
                    MetricGroup read = taishanGroup.addGroup("read");
                    read.gauge("filterFetches", loader::fetches);
                    read.gauge("filterFetchFailures", loader::fetchFailures);
                }
            }
            HeapPriorityQueueSetFactory heapQueueFactory =
                    new HeapPriorityQueueSetFactory(keyGroupRange, numberOfKeyGroups, 128);
            HeapPriorityQueuesManager heapTimers =
                    timerService == TaishanOptions.TimerServiceType.REMOTE
                            ? null
                            : new HeapPriorityQueuesManager(
                                    new HashMap<>(),
                                    heapQueueFactory,
                                    keyGroupRange,
                                    numberOfKeyGroups);
            List<StateMetaInfoSnapshot> restoredStates = manifests.metaInfo();
            if (canonical) {
                // Its writes are raw keys: which of them are map entries, and where their maps'
                // prefixes end, is not known there.
                filters.forgetMapPrefixes();
                restoredStates =
                        CanonicalSavepointRestore.restore(
                                restoreStateHandles,
                                keyGroupRange,
                                userCodeClassLoader,
                                keySerializerProvider,
                                writer,
                                leases,
                                heapTimers == null
                                        ? null
                                        : new CanonicalSavepointRestore.HeapTimers(
                                                heapTimers,
                                                heapQueueFactory,
                                                keyGroupRange,
                                                numberOfKeyGroups));
            }
            ServerSideExpiry expiry =
                    new ServerSideExpiry(
                            store.ttl().orElse(null), table, List.of(leases), ttlTimeProvider);
            BackendMetrics metrics = BackendMetrics.register(taishanGroup);
            ReusableCopies reusableCopies = durableCheckpoints ? new ReusableCopies() : null;
            if (reusableCopies != null && manifests.restoredCopies() != null) {
                reusableCopies.restored(
                        manifests.restoredCopies().checkpointId(),
                        manifests.restoredCopies().paths());
            }
            InternalKeyContextImpl<K> keyContext =
                    new InternalKeyContextImpl<>(keyGroupRange, numberOfKeyGroups);
            TaishanKeyedStateBackend.Parts parts =
                    new TaishanKeyedStateBackend.Parts(
                            connection,
                            store,
                            table,
                            leases,
                            queue,
                            reader,
                            writer,
                            filters,
                            filterLoader,
                            cacheMemory,
                            readMetrics,
                            expiry,
                            heapTimers,
                            timerCacheSize,
                            readPathConfig.cacheType() != CacheType.NONE,
                            restoredStates,
                            metrics,
                            // A canonical savepoint's entries (timers too) were loaded into them.
                            canonical ? keyGroup -> false : opened::contains,
                            reusableCopies);
            TaishanKeyedStateBackend<K> backend =
                    new TaishanKeyedStateBackend<>(
                            kvStateRegistry,
                            keySerializerProvider.currentSchemaSerializer(),
                            userCodeClassLoader,
                            executionConfig,
                            ttlTimeProvider,
                            stateTracking,
                            cancelStreamRegistryForBackend,
                            keyGroupCompressionDecorator,
                            keyContext,
                            parts);
            if (filterLoader != null) {
                // After the restore's own writes: a shard it loaded is complete already.
                filterLoader.loadUnloaded();
            }
            expiry.start(connection.scheduler(), ttlClockReportInterval);
            long millis = (System.nanoTime() - start) / 1_000_000;
            metrics.restored(
                    millis,
                    keyGroupRange.getNumberOfKeyGroups() - unrestored.size(),
                    unrestored.size(),
                    taken.downloadedBytes());
            logger.info(
                    "Taishan keyed backend for table {}, key groups {}{}: {} shard(s) restored"
                            + " from snapshots ({} bytes downloaded from checkpoint storage), {}"
                            + " opened, in {} ms; read cache {} ({} bytes), Bloom filters {},"
                            + " durable checkpoints {}",
                    table,
                    keyGroupRange,
                    canonical ? " (loaded from a canonical savepoint)" : "",
                    keyGroupRange.getNumberOfKeyGroups() - unrestored.size(),
                    taken.downloadedBytes(),
                    unrestored.size(),
                    millis,
                    cacheMemory.handle().type(),
                    cacheMemory.handle().contributedBytes(),
                    readPathConfig.bloomFilterEnabled() ? "on" : "off",
                    durableCheckpoints ? "on" : "off");
            return backend;
        } catch (Throwable t) {
            if (filterLoader != null) {
                filterLoader.close();
            }
            IOUtils.closeQuietly(cancelStreamRegistryForBackend);
            IOUtils.closeQuietly(queue);
            IOUtils.closeQuietly(filters);
            IOUtils.closeQuietly(cacheMemory);
            if (createdTable) {
                if (TaishanRestoreOperation.dropIfUnused(
                        connection.store(), table, keyGroupRange)) {
                    logger.info("Dropped table {}, created by this failed restore", table);
                }
            }
            IOUtils.closeQuietly(connection);
            throw new BackendBuildingException(
                    "Failed to build the Taishan keyed state backend for table " + table, t);
        }
    }

    private SharedKvStores.Handle connect() {
        long start = System.nanoTime();
        try {
            return SharedKvStores.acquire(clientConfig);
        } catch (AuthenticationException e) {
            // It answered: a wrong token or TLS setting, not an unreachable server.
            throw new AuthenticationException(
                    "The Taishan kv-server at "
                            + String.join(",", clientConfig.addresses())
                            + " did not accept this TaskManager's credentials (taishan.kv.token,"
                            + " taishan.kv.token-file, taishan.kv.tls.*): "
                            + e.getMessage(),
                    null,
                    e);
        } catch (KvException e) {
            long millis = (System.nanoTime() - start) / 1_000_000;
            String what =
                    connectionRefused(e)
                            ? "the connection was refused (is a kv-server running there?)"
                            : "no answer within "
                                    + clientConfig.requestTimeout().toMillis()
                                    + " ms per attempt";
            throw new KvException(
                    e.code(),
                    "Cannot reach the Taishan kv-server at "
                            + String.join(",", clientConfig.addresses())
                            + " (taishan.kv.address): "
                            + what
                            + "; gave up after "
                            + clientConfig.maxAttempts()
                            + " attempt(s) in "
                            + millis
                            + " ms. "
                            + e.getMessage(),
                    null,
                    e);
        }
    }

    private static boolean connectionRefused(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.net.ConnectException
                    || String.valueOf(t.getMessage()).contains("Connection refused")) {
                return true;
            }
        }
        return false;
    }
}
