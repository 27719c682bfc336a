package io.taishan.backend;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.annotation.Nonnull;
import javax.annotation.Nullable;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.query.TaskKvStateRegistry;
import org.apache.flink.runtime.state.AbstractKeyedStateBackendBuilder;
import org.apache.flink.runtime.state.BackendBuildingException;
import org.apache.flink.runtime.state.HeapPriorityQueuesManager;
import org.apache.flink.runtime.state.InternalKeyContextImpl;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StreamCompressionDecorator;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.metrics.LatencyTrackingStateConfig;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.IOUtils;

/**
 * Builds a {@link TaishanKeyedStateBackend}: connects, creates the operator's table if needed,
 * restores the owned shards from the handles' manifests, and starts the write queue.
 */
final class TaishanKeyedStateBackendBuilder<K> extends AbstractKeyedStateBackendBuilder<K> {
    private final KvClientConfig clientConfig;
    private final String table;
    private final WriteQueueConfig writeQueueConfig;
    private final TaishanOptions.TimerServiceType timerService;
    private final int timerCacheSize;
    @Nullable private final MetricGroup metricGroup;

    TaishanKeyedStateBackendBuilder(
            TaskKvStateRegistry kvStateRegistry,
            TypeSerializer<K> keySerializer,
            ClassLoader userCodeClassLoader,
            int numberOfKeyGroups,
            KeyGroupRange keyGroupRange,
            ExecutionConfig executionConfig,
            TtlTimeProvider ttlTimeProvider,
            LatencyTrackingStateConfig latencyTrackingStateConfig,
            @Nonnull Collection<KeyedStateHandle> stateHandles,
            StreamCompressionDecorator keyGroupCompressionDecorator,
            CloseableRegistry cancelStreamRegistry,
            KvClientConfig clientConfig,
            String table,
            WriteQueueConfig writeQueueConfig,
            TaishanOptions.TimerServiceType timerService,
            int timerCacheSize,
            @Nullable MetricGroup metricGroup) {
        super(
                kvStateRegistry,
                keySerializer,
                userCodeClassLoader,
                numberOfKeyGroups,
                keyGroupRange,
                executionConfig,
                ttlTimeProvider,
                latencyTrackingStateConfig,
                stateHandles,
                keyGroupCompressionDecorator,
                cancelStreamRegistry);
        this.clientConfig = clientConfig;
        this.table = table;
        this.writeQueueConfig = writeQueueConfig;
        this.timerService = timerService;
        this.timerCacheSize = timerCacheSize;
        this.metricGroup = metricGroup;
    }

    @Override
    public TaishanKeyedStateBackend<K> build() throws BackendBuildingException {
        long start = System.nanoTime();
        SharedKvStores.Handle connection = null;
        WriteBatchQueue writes = null;
        // The registry passed in serves the restore only: Flink closes it once the backend is
        // built, so the backend's snapshots need their own (as in Flink's RocksDB builder).
        CloseableRegistry cancelStreamRegistryForBackend = new CloseableRegistry();
        try {
            boolean canonical = TaishanRestoreOperation.isCanonicalSavepoint(restoreStateHandles);
            TaishanRestoreOperation.Manifests manifests =
                    canonical
                            ? new TaishanRestoreOperation.Manifests(List.of(), Map.of())
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
            boolean newTable = store.describeTable(table).isEmpty();
            store.createTableIfAbsent(table, numberOfKeyGroups);
            List<Integer> unrestored = new ArrayList<>();
            ShardLease[] leases =
                    TaishanRestoreOperation.takeShards(
                            store, table, newTable, keyGroupRange, manifests.refs(), unrestored);

            writes =
                    new WriteBatchQueue(
                            store, table, writeQueueConfig, connection.scheduler(), taishanGroup);
            if (!newTable) {
                for (int keyGroup : unrestored) {
                    writes.deleteRange(
                            leases[keyGroup - keyGroupRange.getStartKeyGroup()],
                            StateKeys.START_OF_ALL_STATES,
                            StateKeys.END_OF_ALL_STATES);
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
                restoredStates =
                        CanonicalSavepointRestore.restore(
                                restoreStateHandles,
                                keyGroupRange,
                                userCodeClassLoader,
                                keySerializerProvider,
                                writes,
                                leases,
                                heapTimers == null
                                        ? null
                                        : new CanonicalSavepointRestore.HeapTimers(
                                                heapTimers,
                                                heapQueueFactory,
                                                keyGroupRange,
                                                numberOfKeyGroups));
            }
            BackendMetrics metrics = BackendMetrics.register(taishanGroup);
            InternalKeyContextImpl<K> keyContext =
                    new InternalKeyContextImpl<>(keyGroupRange, numberOfKeyGroups);
            TaishanKeyedStateBackend<K> backend =
                    new TaishanKeyedStateBackend<>(
                            kvStateRegistry,
                            keySerializerProvider.currentSchemaSerializer(),
                            userCodeClassLoader,
                            executionConfig,
                            ttlTimeProvider,
                            latencyTrackingStateConfig,
                            cancelStreamRegistryForBackend,
                            keyGroupCompressionDecorator,
                            keyContext,
                            connection,
                            store,
                            table,
                            leases,
                            writes,
                            heapTimers,
                            timerCacheSize,
                            restoredStates,
                            metrics);
            long millis = (System.nanoTime() - start) / 1_000_000;
            metrics.restored(millis);
            logger.info(
                    "Taishan keyed backend for table {}, key groups {}{}: {} shard(s) restored"
                            + " from snapshots, {} opened, in {} ms",
                    table,
                    keyGroupRange,
                    canonical ? " (loaded from a canonical savepoint)" : "",
                    keyGroupRange.getNumberOfKeyGroups() - unrestored.size(),
                    unrestored.size(),
                    millis);
            return backend;
        } catch (Throwable t) {
            IOUtils.closeQuietly(cancelStreamRegistryForBackend);
            IOUtils.closeQuietly(writes);
            IOUtils.closeQuietly(connection);
            throw new BackendBuildingException(
                    "Failed to build the Taishan keyed state backend for table " + table, t);
        }
    }

    private SharedKvStores.Handle connect() {
        try {
            return SharedKvStores.acquire(clientConfig);
        } catch (KvException e) {
            throw new KvException(
                    e.code(),
                    "Cannot reach the Taishan kv-server at "
                            + clientConfig.addresses()
                            + " (taishan.kv.address) within "
                            + clientConfig.requestTimeout()
                            + ": "
                            + e.getMessage(),
                    null,
                    e);
        }
    }
}
