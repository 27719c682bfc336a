package io.taishan.backend;

import io.taishan.backend.flink.StateTracking;
import io.taishan.backend.flink.TaishanKeyedStateBackendBase;
import io.taishan.backend.iterator.StateKeyStreams;
import io.taishan.backend.read.FilterLoader;
import io.taishan.backend.read.ReadMetrics;
import io.taishan.backend.read.ShardFilters;
import io.taishan.backend.read.StateReader;
import io.taishan.backend.remote.SharedKvStores;
import io.taishan.backend.snapshot.BackendMetrics;
import io.taishan.backend.snapshot.ReusableCopies;
import io.taishan.backend.snapshot.SnapshotIds;
import io.taishan.backend.snapshot.TaishanFullSnapshotResources;
import io.taishan.backend.snapshot.TaishanSnapshotStrategy;
import io.taishan.backend.state.RegisteredStates;
import io.taishan.backend.state.StateContext;
import io.taishan.backend.state.TaishanStateFactory;
import io.taishan.backend.timers.TaishanPriorityQueueFactory;
import io.taishan.backend.ttl.ServerSideExpiry;
import io.taishan.backend.write.StateWriter;
import io.taishan.backend.write.WriteBatchQueue;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.snapshot.RemoteSnapshotReleaser;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RunnableFuture;
import java.util.function.IntPredicate;
import java.util.stream.Stream;
import javax.annotation.Nonnull;
import javax.annotation.Nullable;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.checkpoint.SnapshotType;
import org.apache.flink.runtime.query.TaskKvStateRegistry;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.HeapPriorityQueuesManager;
import org.apache.flink.runtime.state.InternalKeyContext;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.Keyed;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PriorityComparable;
import org.apache.flink.runtime.state.SavepointResources;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.SnapshotExecutionType;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategyRunner;
import org.apache.flink.runtime.state.StateSnapshotTransformer.StateSnapshotTransformFactory;
import org.apache.flink.runtime.state.StreamCompressionDecorator;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueElement;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSnapshotRestoreWrapper;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueStateSnapshot;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.IOUtils;

/**
 * The keyed state backend of one subtask, after Flink's {@code RocksDBKeyedStateBackend}: the
 * subtask's key groups are shards of one remote table (one per job and operator), each state's
 * entries sit behind its state id in RocksDB's byte layout.
 *
 * <p>Each of its jobs has its own class, found from here: states ({@link TaishanStateFactory},
 * package {@code state}), the write path ({@link StateWriter}, package {@code write}), the read
 * path ({@link StateReader}, package {@code read}), timers ({@link TaishanPriorityQueueFactory},
 * package {@code timers}), key iteration ({@link StateKeyStreams}, package {@code iterator}),
 * checkpoints ({@link TaishanSnapshotStrategy}, package {@code snapshot}); the restore happened in
 * the builder ({@link TaishanKeyedStateBackendBuilder}, package {@code restore}).
 */
public class TaishanKeyedStateBackend<K> extends TaishanKeyedStateBackendBase<K> {

    /** What the builder made for the backend, handed over whole. */
    record Parts(
            SharedKvStores.Handle connection,
            KvStore store,
            String table,
            ShardLease[] leases,
            WriteBatchQueue queue,
            StateReader reader,
            StateWriter writer,
            ShardFilters filters,
            @Nullable FilterLoader filterLoader,
            AutoCloseable cacheMemory,
            ReadMetrics readMetrics,
            ServerSideExpiry expiry,
            @Nullable HeapPriorityQueuesManager heapTimers,
            int timerCacheSize,
            boolean cacheEnabled,
            List<StateMetaInfoSnapshot> restoredStates,
            BackendMetrics metrics,
            IntPredicate startedEmpty,
            @Nullable ReusableCopies reusableCopies) {}

    private final Parts parts;
    private final ExecutionConfig executionConfig;
    private final int keyGroupPrefixBytes;
    private final SerializedCompositeKeyBuilder<K> sharedKeyBuilder;
    private final RegisteredStates registered;
    private final TaishanStateFactory<K> stateFactory;
    @Nullable private final TaishanPriorityQueueFactory remoteTimers;
    private final StateKeyStreams<K> keyStreams;
    private final TaishanSnapshotStrategy<K> checkpointStrategy;
    private final TaishanSnapshotStrategy<K> savepointStrategy;
    private final RemoteSnapshotReleaser snapshotReleaser;
    private long currentKeyVersion;
    private boolean disposed;
    private CompletableFuture<Void> lastRelease = CompletableFuture.completedFuture(null);

    TaishanKeyedStateBackend(
            TaskKvStateRegistry kvStateRegistry,
            TypeSerializer<K> keySerializer,
            ClassLoader userCodeClassLoader,
            ExecutionConfig executionConfig,
            TtlTimeProvider ttlTimeProvider,
            StateTracking stateTracking,
            CloseableRegistry cancelStreamRegistry,
            StreamCompressionDecorator keyGroupCompressionDecorator,
            InternalKeyContext<K> keyContext,
            Parts parts) {
        super(
                kvStateRegistry,
                keySerializer,
                userCodeClassLoader,
                executionConfig,
                ttlTimeProvider,
                stateTracking,
                cancelStreamRegistry,
                keyGroupCompressionDecorator,
                keyContext);
        this.parts = parts;
        this.executionConfig = executionConfig;
        this.keyGroupPrefixBytes =
                CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(
                        keyContext.getNumberOfKeyGroups());
        this.sharedKeyBuilder =
                new SerializedCompositeKeyBuilder<>(keySerializer, keyGroupPrefixBytes, 32);
        this.registered = new RegisteredStates(parts.restoredStates());
        List<ShardLease> leases = leases();
        this.stateFactory =
                new TaishanStateFactory<>(
                        new Context(),
                        registered,
                        leases,
                        parts.cacheEnabled(),
                        parts.table(),
                        parts.expiry(),
                        ttlTimeProvider);
        this.remoteTimers =
                parts.heapTimers() != null
                        ? null
                        : new TaishanPriorityQueueFactory(
                                registered,
                                parts.reader(),
                                parts.writer(),
                                this::leaseOf,
                                keyGroupRange,
                                numberOfKeyGroups,
                                keyGroupPrefixBytes,
                                parts.timerCacheSize(),
                                parts.startedEmpty());
        this.keyStreams =
                new StateKeyStreams<>(
                        registered, parts.reader(), keySerializer, keyGroupPrefixBytes, leases);
        this.snapshotReleaser =
                new RemoteSnapshotReleaser(
                        parts.store(),
                        parts.table(),
                        this::ownedShards,
                        parts.connection().background());
        SnapshotIds ids = new SnapshotIds();
        UUID backendId = UUID.randomUUID();
        this.checkpointStrategy = snapshotStrategy(ids, false, backendId);
        this.savepointStrategy = snapshotStrategy(ids, true, backendId);
    }

    private TaishanSnapshotStrategy<K> snapshotStrategy(
            SnapshotIds ids, boolean pinned, UUID backendId) {
        return new TaishanSnapshotStrategy<>(
                parts.store(),
                parts.table(),
                parts.queue(),
                leases(),
                registered,
                keySerializer,
                keyGroupRange,
                parts.metrics(),
                ids,
                snapshotReleaser,
                pinned,
                backendId,
                parts.reusableCopies());
    }

    // ---- what the states see

    /** The backend as its states see it. */
    private final class Context implements StateContext<K> {
        @Override
        public SerializedCompositeKeyBuilder<K> sharedKeyBuilder() {
            return sharedKeyBuilder;
        }

        @Override
        public long currentKeyVersion() {
            return currentKeyVersion;
        }

        @Override
        public ShardLease currentLease() {
            return parts.leases()[getCurrentKeyGroupIndex() - keyGroupRange.getStartKeyGroup()];
        }

        @Override
        public ShardLease leaseOf(int keyGroup) {
            return TaishanKeyedStateBackend.this.leaseOf(keyGroup);
        }

        @Override
        public int keyGroupPrefixBytes() {
            return keyGroupPrefixBytes;
        }

        @Override
        public int numberOfKeyGroups() {
            return numberOfKeyGroups;
        }

        @Override
        public TypeSerializer<K> keySerializer() {
            return getKeySerializer();
        }

        @Override
        public StateReader reader() {
            return parts.reader();
        }

        @Override
        public StateWriter writer() {
            return parts.writer();
        }
    }

    ShardLease leaseOf(int keyGroup) {
        if (!keyGroupRange.contains(keyGroup)) {
            throw new IllegalArgumentException(
                    "key group " + keyGroup + " is not in this subtask's range " + keyGroupRange);
        }
        return parts.leases()[keyGroup - keyGroupRange.getStartKeyGroup()];
    }

    String tableName() {
        return parts.table();
    }

    List<ShardLease> leases() {
        return Collections.unmodifiableList(Arrays.asList(parts.leases()));
    }

    List<Integer> ownedShards() {
        List<Integer> shards = new ArrayList<>(parts.leases().length);
        for (ShardLease lease : parts.leases()) {
            shards.add(lease.shard());
        }
        return shards;
    }

    /** The write queue, for tests that look under the write path. */
    WriteBatchQueue writeQueue() {
        return parts.queue();
    }

    /** The job's execution config, which makes the serializers of states described by type. */
    public ExecutionConfig executionConfig() {
        return executionConfig;
    }

    /** The read chain: the asynchronous backend's batches read through it too (Flink 2). */
    public StateReader reader() {
        return parts.reader();
    }

    /** What the read path did, for tests and benchmarks. */
    public ReadMetrics readMetrics() {
        return parts.readMetrics();
    }

    /** The shards' Bloom filters, for tests. */
    ShardFilters filters() {
        return parts.filters();
    }

    /** Loads the server's filters in the background; null with the filters off. */
    @Nullable
    FilterLoader filterLoader() {
        return parts.filterLoader();
    }

    @Override
    protected void currentKeyChanged() {
        sharedKeyBuilder.setKeyAndKeyGroup(getCurrentKey(), getCurrentKeyGroupIndex());
        currentKeyVersion++;
    }

    /** What Flink's metrics call this backend (abstract in {@code KeyedStateBackend} on 2.2+). */
    public String getBackendTypeIdentifier() {
        return "taishan";
    }

    // ---- states

    @Override
    @Nonnull
    public <N, SV, SEV, S extends State, IS extends S> IS createOrUpdateInternalState(
            @Nonnull TypeSerializer<N> namespaceSerializer,
            @Nonnull StateDescriptor<S, SV> stateDesc,
            @Nonnull StateSnapshotTransformFactory<SEV> snapshotTransformFactory)
            throws Exception {
        return createOrUpdateInternalState(
                namespaceSerializer, stateDesc, snapshotTransformFactory, false);
    }

    @Override
    @Nonnull
    public <N, SV, SEV, S extends State, IS extends S> IS createOrUpdateInternalState(
            @Nonnull TypeSerializer<N> namespaceSerializer,
            @Nonnull StateDescriptor<S, SV> stateDesc,
            @Nonnull StateSnapshotTransformFactory<SEV> snapshotTransformFactory,
            boolean allowFutureMetadataUpdates)
            throws Exception {
        return stateFactory.createOrUpdate(
                namespaceSerializer,
                stateDesc,
                snapshotTransformFactory,
                allowFutureMetadataUpdates);
    }

    // ---- keys

    @Override
    public <N> Stream<K> getKeys(String state, N namespace) {
        return keyStreams.keys(List.of(state), namespace);
    }

    @Override
    public <N> Stream<K> getKeys(List<String> states, N namespace) {
        return keyStreams.keys(states, namespace);
    }

    @Override
    public <N> Stream<Tuple2<K, N>> getKeysAndNamespaces(String state) {
        return keyStreams.keysAndNamespaces(state);
    }

    @Override
    public int numKeyValueStateEntries() {
        return keyStreams.countEntries();
    }

    // ---- timers

    @Nonnull
    @Override
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> byteOrderedElementSerializer) {
        return create(stateName, byteOrderedElementSerializer, false);
    }

    @Override
    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    @Nonnull String stateName,
                    @Nonnull TypeSerializer<T> byteOrderedElementSerializer,
                    boolean allowFutureMetadataUpdates) {
        if (remoteTimers == null) {
            return parts.heapTimers()
                    .createOrUpdate(
                            stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
        }
        return remoteTimers.create(
                stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
    }

    @Override
    public boolean requiresLegacySynchronousTimerSnapshots(SnapshotType checkpointType) {
        // Heap timers are written by the operator as raw keyed state, as RocksDB's HEAP timers;
        // native savepoints are checkpoints of ours, so they need them too.
        return parts.heapTimers() != null && !isCanonicalSavepoint(checkpointType);
    }

    private static boolean isCanonicalSavepoint(SnapshotType type) {
        return type.isSavepoint()
                && ((SavepointType) type).getFormatType() == SavepointFormatType.CANONICAL;
    }

    // ---- checkpoints

    @Nonnull
    @Override
    public RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot(
            long checkpointId,
            long timestamp,
            @Nonnull CheckpointStreamFactory streamFactory,
            @Nonnull CheckpointOptions checkpointOptions)
            throws Exception {
        TaishanSnapshotStrategy<K> strategy =
                checkpointOptions.getCheckpointType().isSavepoint()
                        ? savepointStrategy
                        : checkpointStrategy;
        return new SnapshotStrategyRunner<>(
                        strategy.getDescription(),
                        strategy,
                        cancelStreamRegistry,
                        SnapshotExecutionType.ASYNCHRONOUS)
                .snapshot(checkpointId, timestamp, streamFactory, checkpointOptions);
    }

    /**
     * A canonical savepoint. The shards are read live, so Flink runs it synchronously: nothing is
     * written while it is taken.
     */
    @Nonnull
    @Override
    public SavepointResources<K> savepoint() {
        parts.queue().flushAndWait();
        List<StateMetaInfoSnapshot> metaInfo = new ArrayList<>(registered.size());
        int[] stateIds = new int[registered.size()];
        int i = 0;
        for (RegisteredStates.Info info : registered.all()) {
            metaInfo.add(info.metaInfo().snapshot());
            stateIds[i++] = info.stateId();
        }
        List<HeapPriorityQueueStateSnapshot<?>> heapQueues = new ArrayList<>();
        if (parts.heapTimers() != null) {
            for (HeapPriorityQueueSnapshotRestoreWrapper<?> queue :
                    parts.heapTimers().getRegisteredPQStates().values()) {
                metaInfo.add(queue.getMetaInfo().snapshot());
                heapQueues.add(queue.stateSnapshot());
            }
        }
        return new SavepointResources<>(
                new TaishanFullSnapshotResources<>(
                        parts.store(),
                        leases(),
                        metaInfo,
                        stateIds,
                        heapQueues,
                        keyGroupPrefixBytes,
                        keyGroupRange,
                        keySerializer,
                        keyGroupCompressionDecorator),
                SnapshotExecutionType.SYNCHRONOUS);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) {
        if (parts.reusableCopies() != null) {
            parts.reusableCopies().completed(checkpointId);
        }
    }

    @Override
    public void notifyCheckpointSubsumed(long checkpointId) {
        lastRelease = snapshotReleaser.onCheckpointSubsumed(checkpointId);
    }

    @Override
    public void notifyCheckpointAborted(long checkpointId) {
        if (parts.reusableCopies() != null) {
            parts.reusableCopies().aborted(checkpointId);
        }
        lastRelease = snapshotReleaser.onCheckpointAborted(checkpointId);
    }

    /** What snapshots and the restore did, for tests. */
    BackendMetrics backendMetrics() {
        return parts.metrics();
    }

    /** The release of remote snapshots asked for last, done off the task thread. */
    CompletableFuture<Void> lastRelease() {
        return lastRelease;
    }

    @Override
    public boolean isSafeToReuseKVState() {
        return true;
    }

    @Override
    public void dispose() {
        if (disposed) {
            return;
        }
        disposed = true;
        super.dispose();
        if (parts.filterLoader() != null) {
            parts.filterLoader().close();
        }
        parts.expiry().close();
        IOUtils.closeQuietly(parts.queue());
        // Before the connection: its close drains the drops this queues.
        lastRelease = snapshotReleaser.close(parts.queue().inFlightWrite());
        IOUtils.closeQuietly(parts.filters());
        IOUtils.closeQuietly(parts.cacheMemory());
        IOUtils.closeQuietly(parts.connection());
        registered.clear();
        stateFactory.clear();
    }
}
