package io.taishan.backend;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ScanRange;
import io.taishan.kv.client.ShardLease;
import io.taishan.snapshot.RemoteSnapshotReleaser;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RunnableFuture;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import javax.annotation.Nonnull;
import javax.annotation.Nullable;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializerSnapshot;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.checkpoint.SnapshotType;
import org.apache.flink.runtime.query.TaskKvStateRegistry;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.HeapPriorityQueuesManager;
import org.apache.flink.runtime.state.InternalKeyContext;
import org.apache.flink.runtime.state.KeyExtractorFunction;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.Keyed;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PriorityComparable;
import org.apache.flink.runtime.state.PriorityComparator;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.RegisteredPriorityQueueStateBackendMetaInfo;
import org.apache.flink.runtime.state.RegisteredStateMetaInfoBase;
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
import org.apache.flink.runtime.state.heap.KeyGroupPartitionedPriorityQueue;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.metrics.LatencyTrackingStateConfig;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.IOUtils;
import org.apache.flink.util.StateMigrationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keyed state backend of one subtask, after Flink's {@code RocksDBKeyedStateBackend}: the
 * subtask's key groups are shards of one remote table (one per job and operator), each state's
 * entries sit behind its state id in RocksDB's byte layout, writes go through the subtask's {@link
 * WriteBatchQueue}, and a checkpoint is a snapshot of every owned shard cut by a marker in its
 * write stream (see {@link TaishanSnapshotStrategy}).
 */
public class TaishanKeyedStateBackend<K> extends AbstractKeyedStateBackend<K> {
    private static final Logger LOG = LoggerFactory.getLogger(TaishanKeyedStateBackend.class);

    private static final int KEYS_PAGE_SIZE = 1024;

    private final SharedKvStores.Handle connection;
    private final KvStore store;
    private final String table;
    private final ShardLease[] leases;
    private final WriteBatchQueue writes;
    private final int keyGroupPrefixBytes;
    private final SerializedCompositeKeyBuilder<K> sharedKeyBuilder;

    /** Null when timers live in the store. */
    @Nullable private final HeapPriorityQueuesManager heapTimers;

    private final int timerCacheSize;
    private final RemoteSnapshotReleaser snapshotReleaser;
    private final BackendMetrics metrics;

    /** Registered and restored states by name, in registration order; ids never collide. */
    private final LinkedHashMap<String, StateInfo> states;

    private final Map<Integer, String> stateNamesById = new HashMap<>();
    private final Map<String, State> createdStates = new HashMap<>();

    /** The highest snapshot id this backend asked for; only the task thread touches it. */
    private long highestSnapshotId = Long.MIN_VALUE;

    private boolean disposed;

    private CompletableFuture<Void> lastRelease = CompletableFuture.completedFuture(null);

    TaishanKeyedStateBackend(
            TaskKvStateRegistry kvStateRegistry,
            TypeSerializer<K> keySerializer,
            ClassLoader userCodeClassLoader,
            ExecutionConfig executionConfig,
            TtlTimeProvider ttlTimeProvider,
            LatencyTrackingStateConfig latencyTrackingStateConfig,
            CloseableRegistry cancelStreamRegistry,
            StreamCompressionDecorator keyGroupCompressionDecorator,
            InternalKeyContext<K> keyContext,
            SharedKvStores.Handle connection,
            KvStore store,
            String table,
            ShardLease[] leases,
            WriteBatchQueue writes,
            @Nullable HeapPriorityQueuesManager heapTimers,
            int timerCacheSize,
            List<StateMetaInfoSnapshot> restoredStates,
            BackendMetrics metrics) {
        super(
                kvStateRegistry,
                keySerializer,
                userCodeClassLoader,
                executionConfig,
                ttlTimeProvider,
                latencyTrackingStateConfig,
                cancelStreamRegistry,
                keyGroupCompressionDecorator,
                keyContext);
        this.connection = connection;
        this.store = store;
        this.table = table;
        this.leases = leases;
        this.writes = writes;
        this.keyGroupPrefixBytes =
                CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(
                        keyContext.getNumberOfKeyGroups());
        this.sharedKeyBuilder =
                new SerializedCompositeKeyBuilder<>(keySerializer, keyGroupPrefixBytes, 32);
        this.heapTimers = heapTimers;
        this.timerCacheSize = timerCacheSize;
        this.metrics = metrics;
        this.states = new LinkedHashMap<>();
        for (StateMetaInfoSnapshot restored : restoredStates) {
            register(RegisteredStateMetaInfoBase.fromMetaInfoSnapshot(restored));
        }
        this.snapshotReleaser =
                new RemoteSnapshotReleaser(
                        store, table, this::ownedShards, connection.background());
    }

    // ---- what the states use

    WriteBatchQueue writes() {
        return writes;
    }

    SerializedCompositeKeyBuilder<K> sharedKeyBuilder() {
        return sharedKeyBuilder;
    }

    int keyGroupPrefixBytes() {
        return keyGroupPrefixBytes;
    }

    ShardLease leaseOfCurrentKeyGroup() {
        return leases[getCurrentKeyGroupIndex() - keyGroupRange.getStartKeyGroup()];
    }

    ShardLease leaseOf(int keyGroup) {
        if (!keyGroupRange.contains(keyGroup)) {
            throw new IllegalArgumentException(
                    "key group " + keyGroup + " is not in this subtask's range " + keyGroupRange);
        }
        return leases[keyGroup - keyGroupRange.getStartKeyGroup()];
    }

    String tableName() {
        return table;
    }

    KvStore store() {
        return store;
    }

    List<ShardLease> leases() {
        return Collections.unmodifiableList(Arrays.asList(leases));
    }

    List<Integer> ownedShards() {
        List<Integer> shards = new ArrayList<>(leases.length);
        for (ShardLease lease : leases) {
            shards.add(lease.shard());
        }
        return shards;
    }

    BackendMetrics metrics() {
        return metrics;
    }

    /**
     * Up to {@code limit} entries of {@code [start, end)} in one shard, after every pending write
     * has been applied.
     */
    List<KvEntry> scanPage(
            ShardLease lease, byte[] start, byte[] end, int limit, boolean keysOnly) {
        writes.flushAndWait();
        List<KvEntry> page = new ArrayList<>(Math.min(limit, 128));
        try (CloseableIterator<KvEntry> it =
                Uninterruptibly.iterate(
                        () -> store.scan(lease, ScanRange.between(start, end), limit, keysOnly))) {
            while (page.size() < limit && it.hasNext()) {
                page.add(it.next());
            }
        }
        return page;
    }

    @Override
    public void setCurrentKey(K newKey) {
        super.setCurrentKey(newKey);
        sharedKeyBuilder.setKeyAndKeyGroup(getCurrentKey(), getCurrentKeyGroupIndex());
    }

    // ---- state registration

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
        StateInfo info = states.get(stateDesc.getName());
        RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo;
        if (info != null) {
            if (!(info.metaInfo instanceof RegisteredKeyValueStateBackendMetaInfo)) {
                throw new IllegalStateException(
                        "State name '"
                                + stateDesc.getName()
                                + "' is already used by a priority queue state.");
            }
            @SuppressWarnings("unchecked")
            RegisteredKeyValueStateBackendMetaInfo<N, SV> existing =
                    (RegisteredKeyValueStateBackendMetaInfo<N, SV>) info.metaInfo;
            metaInfo = updateMetaInfo(info.stateId, existing, stateDesc, namespaceSerializer);
        } else {
            metaInfo =
                    new RegisteredKeyValueStateBackendMetaInfo<>(
                            stateDesc.getType(),
                            stateDesc.getName(),
                            namespaceSerializer,
                            stateDesc.getSerializer(),
                            StateSnapshotTransformFactory.noTransform());
        }
        if (allowFutureMetadataUpdates) {
            metaInfo = metaInfo.withSerializerUpgradesAllowed();
        }
        info = register(metaInfo);
        return createState(stateDesc, info.stateId, metaInfo);
    }

    private StateInfo register(RegisteredStateMetaInfoBase metaInfo) {
        String name = metaInfo.getName();
        int stateId = StateKeys.stateId(name);
        String holder = stateNamesById.putIfAbsent(stateId, name);
        if (holder != null && !holder.equals(name)) {
            throw new FlinkRuntimeException(
                    "The state names '"
                            + holder
                            + "' and '"
                            + name
                            + "' map to the same Taishan state id "
                            + stateId
                            + "; rename one of them.");
        }
        StateInfo info = new StateInfo(stateId, metaInfo);
        states.put(name, info);
        return info;
    }

    private <N, SV, S extends State> RegisteredKeyValueStateBackendMetaInfo<N, SV> updateMetaInfo(
            int stateId,
            RegisteredKeyValueStateBackendMetaInfo<N, SV> restored,
            StateDescriptor<S, SV> stateDesc,
            TypeSerializer<N> namespaceSerializer)
            throws Exception {
        TypeSerializer<N> previousNamespaceSerializer = restored.getNamespaceSerializer();
        TypeSerializerSchemaCompatibility<N> namespaceCompatibility =
                restored.updateNamespaceSerializer(namespaceSerializer);
        if (namespaceCompatibility.isCompatibleAfterMigration()
                || namespaceCompatibility.isIncompatible()) {
            throw new StateMigrationException(
                    "The new namespace serializer ("
                            + namespaceSerializer
                            + ") must be compatible with the old namespace serializer ("
                            + previousNamespaceSerializer
                            + ").");
        }
        restored.checkStateMetaInfo(stateDesc);

        TypeSerializer<SV> previousStateSerializer = restored.getStateSerializer();
        TypeSerializerSchemaCompatibility<SV> stateCompatibility =
                restored.updateStateSerializer(stateDesc.getSerializer());
        if (stateCompatibility.isCompatibleAfterMigration()) {
            migrateStateValues(stateId, stateDesc, restored);
        } else if (stateCompatibility.isIncompatible()) {
            throw new StateMigrationException(
                    "The new state serializer ("
                            + stateDesc.getSerializer()
                            + ") must not be incompatible with the old state serializer ("
                            + previousStateSerializer
                            + ").");
        }
        return restored;
    }

    /** Rewrites every stored value of the state from the previous serializer's format. */
    @SuppressWarnings("unchecked")
    private <N, SV, S extends State> void migrateStateValues(
            int stateId,
            StateDescriptor<S, SV> stateDesc,
            RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo)
            throws Exception {
        if (stateDesc.getType() == StateDescriptor.Type.MAP) {
            TypeSerializerSnapshot<SV> previous = metaInfo.getPreviousStateSerializerSnapshot();
            if (!(previous instanceof MapSerializerSnapshot)
                    || !(metaInfo.getStateSerializer() instanceof MapSerializer)) {
                throw new IllegalStateException("map state without map serializers: " + stateDesc);
            }
            MapSerializerSnapshot<?, ?> previousMap = (MapSerializerSnapshot<?, ?>) previous;
            MapSerializer<?, ?> newMap = (MapSerializer<?, ?>) metaInfo.getStateSerializer();
            if (!userKeySchemaUnchanged(previousMap, newMap)) {
                throw new StateMigrationException(
                        "The new serializer for a MapState requires state migration in order for"
                                + " the job to proceed, since the key schema has changed."
                                + " However, migration for MapState currently only allows value"
                                + " schema evolutions.");
            }
        }
        LOG.info(
                "Migrating the values of state {} in table {}: its serializer's format changed.",
                stateDesc.getName(),
                table);
        AbstractTaishanState<K, N, SV> state =
                (AbstractTaishanState<K, N, SV>) (State) newState(stateDesc, stateId, metaInfo);
        byte[] stateIdBytes = StateKeys.stateIdBytes(stateId);
        DataInputDeserializer oldValue = new DataInputDeserializer();
        DataOutputSerializer newValue = new DataOutputSerializer(512);
        writes.flushAndWait();
        for (ShardLease lease : leases) {
            byte[] prefix =
                    StateKeys.keyGroupPrefix(stateIdBytes, lease.shard(), keyGroupPrefixBytes);
            try (CloseableIterator<KvEntry> entries =
                    Uninterruptibly.iterate(
                            () ->
                                    store.scan(
                                            lease,
                                            ScanRange.prefix(prefix),
                                            KEYS_PAGE_SIZE,
                                            false))) {
                while (entries.hasNext()) {
                    KvEntry entry = entries.next();
                    oldValue.setBuffer(entry.value());
                    newValue.clear();
                    state.migrateSerializedValue(
                            oldValue,
                            newValue,
                            metaInfo.getPreviousStateSerializer(),
                            metaInfo.getStateSerializer());
                    writes.put(lease, entry.key(), newValue.getCopyOfBuffer());
                }
            }
        }
        writes.flushAndWait();
    }

    @SuppressWarnings("unchecked")
    private static <UK> boolean userKeySchemaUnchanged(
            MapSerializerSnapshot<?, ?> previous, MapSerializer<?, ?> current) {
        TypeSerializerSnapshot<UK> previousKey =
                (TypeSerializerSnapshot<UK>) previous.getKeySerializerSnapshot();
        TypeSerializer<UK> currentKey = (TypeSerializer<UK>) current.getKeySerializer();
        return currentKey
                .snapshotConfiguration()
                .resolveSchemaCompatibility(previousKey)
                .isCompatibleAsIs();
    }

    @SuppressWarnings("unchecked")
    private <N, SV, S extends State, IS extends S> IS createState(
            StateDescriptor<S, SV> stateDesc,
            int stateId,
            RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo) {
        State existing = createdStates.get(stateDesc.getName());
        IS state;
        if (existing == null) {
            state = (IS) newState(stateDesc, stateId, metaInfo);
        } else {
            state = (IS) updateState(existing, stateDesc, metaInfo);
        }
        createdStates.put(stateDesc.getName(), state);
        return state;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private <N, SV, S extends State> State newState(
            StateDescriptor<S, SV> stateDesc,
            int stateId,
            RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo) {
        TypeSerializer<N> ns = metaInfo.getNamespaceSerializer();
        TypeSerializer<SV> values = metaInfo.getStateSerializer();
        SV defaultValue = stateDesc.getDefaultValue();
        switch (stateDesc.getType()) {
            case VALUE:
                return new TaishanValueState<>(this, stateId, ns, values, defaultValue);
            case LIST:
                return new TaishanListState(this, stateId, ns, values, (List) defaultValue);
            case MAP:
                return new TaishanMapState(this, stateId, ns, values, (Map) defaultValue);
            case REDUCING:
                return new TaishanReducingState<>(
                        this,
                        stateId,
                        ns,
                        values,
                        defaultValue,
                        ((ReducingStateDescriptor<SV>) stateDesc).getReduceFunction());
            case AGGREGATING:
                return new TaishanAggregatingState<>(
                        this,
                        stateId,
                        ns,
                        values,
                        defaultValue,
                        ((AggregatingStateDescriptor) stateDesc).getAggregateFunction());
            default:
                throw new FlinkRuntimeException(
                        String.format(
                                "State %s is not supported by %s",
                                stateDesc.getClass(), getClass()));
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private <N, SV, S extends State> State updateState(
            State existing,
            StateDescriptor<S, SV> stateDesc,
            RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo) {
        AbstractTaishanState state = (AbstractTaishanState) existing;
        if (state instanceof TaishanReducingState) {
            ((TaishanReducingState) state)
                    .setReduceFunction(
                            ((ReducingStateDescriptor<SV>) stateDesc).getReduceFunction());
        } else if (state instanceof TaishanAggregatingState) {
            ((TaishanAggregatingState) state)
                    .setAggFunction(
                            ((AggregatingStateDescriptor) stateDesc).getAggregateFunction());
        }
        return state.setNamespaceSerializer(metaInfo.getNamespaceSerializer())
                .setValueSerializer(metaInfo.getStateSerializer())
                .setDefaultValue(stateDesc.getDefaultValue());
    }

    // ---- keys

    @Override
    public <N> Stream<K> getKeys(String state, N namespace) {
        return getKeys(List.of(state), namespace);
    }

    @Override
    public <N> Stream<K> getKeys(List<String> stateNames, N namespace) {
        List<StateKeysIterator.Source> sources = new ArrayList<>();
        byte[] namespaceBytes = null;
        for (String name : stateNames) {
            StateInfo info = states.get(name);
            if (info == null
                    || !(info.metaInfo instanceof RegisteredKeyValueStateBackendMetaInfo)) {
                continue;
            }
            @SuppressWarnings("unchecked")
            TypeSerializer<N> namespaceSerializer =
                    ((RegisteredKeyValueStateBackendMetaInfo<N, ?>) info.metaInfo)
                            .getNamespaceSerializer();
            boolean ambiguous =
                    CompositeKeySerializationUtils.isAmbiguousKeyPossible(
                            getKeySerializer(), namespaceSerializer);
            byte[] bytes;
            try {
                DataOutputSerializer out = new DataOutputSerializer(16);
                CompositeKeySerializationUtils.writeNameSpace(
                        namespace, namespaceSerializer, out, ambiguous);
                bytes = out.getCopyOfBuffer();
            } catch (Exception e) {
                throw new FlinkRuntimeException("Failed to serialize the namespace", e);
            }
            if (namespaceBytes == null) {
                namespaceBytes = bytes;
            } else if (!Arrays.equals(namespaceBytes, bytes)) {
                throw new FlinkRuntimeException(
                        "Key namespaces are different for states ["
                                + String.join(",", stateNames)
                                + "]");
            }
            sources.add(new StateKeysIterator.Source(info.stateId, ambiguous));
        }
        if (sources.isEmpty()) {
            return Stream.empty();
        }
        byte[] expectedNamespace = namespaceBytes;
        return toStream(
                new StateKeysIterator<K, K>(
                        this,
                        sources,
                        (key, in, storeKey, ambiguous) ->
                                matches(storeKey, in.getPosition(), expectedNamespace)
                                        ? key
                                        : null));
    }

    @Override
    public <N> Stream<Tuple2<K, N>> getKeysAndNamespaces(String stateName) {
        StateInfo info = states.get(stateName);
        if (info == null || !(info.metaInfo instanceof RegisteredKeyValueStateBackendMetaInfo)) {
            return Stream.empty();
        }
        @SuppressWarnings("unchecked")
        TypeSerializer<N> namespaceSerializer =
                ((RegisteredKeyValueStateBackendMetaInfo<N, ?>) info.metaInfo)
                        .getNamespaceSerializer();
        boolean ambiguous =
                CompositeKeySerializationUtils.isAmbiguousKeyPossible(
                        getKeySerializer(), namespaceSerializer);
        StateKeysIterator<K, Tuple2<K, N>> iterator =
                new StateKeysIterator<K, Tuple2<K, N>>(
                        this,
                        List.of(new StateKeysIterator.Source(info.stateId, ambiguous)),
                        (key, in, storeKey, isAmbiguous) ->
                                Tuple2.of(
                                        key,
                                        CompositeKeySerializationUtils.readNamespace(
                                                namespaceSerializer, in, isAmbiguous)));
        return toStream(iterator);
    }

    private static <T> Stream<T> toStream(StateKeysIterator<?, T> iterator) {
        return StreamSupport.stream(
                        Spliterators.spliteratorUnknownSize(iterator, Spliterator.ORDERED), false)
                .onClose(iterator::close);
    }

    private static boolean matches(byte[] key, int start, byte[] expected) {
        if (key.length < start + expected.length) {
            return false;
        }
        for (int i = 0; i < expected.length; i++) {
            if (key[start + i] != expected[i]) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int numKeyValueStateEntries() {
        writes.flushAndWait();
        int count = 0;
        for (StateInfo info : states.values()) {
            byte[] stateIdBytes = StateKeys.stateIdBytes(info.stateId);
            for (ShardLease lease : leases) {
                byte[] prefix =
                        StateKeys.keyGroupPrefix(stateIdBytes, lease.shard(), keyGroupPrefixBytes);
                try (CloseableIterator<KvEntry> it =
                        Uninterruptibly.iterate(
                                () -> store.scan(lease, ScanRange.prefix(prefix), 0, true))) {
                    while (it.hasNext()) {
                        it.next();
                        count++;
                    }
                }
            }
        }
        return count;
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
        if (heapTimers != null) {
            return heapTimers.createOrUpdate(
                    stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
        }
        int stateId =
                registerPriorityQueue(
                        stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
        byte[] stateIdBytes = StateKeys.stateIdBytes(stateId);
        return new KeyGroupPartitionedPriorityQueue<>(
                KeyExtractorFunction.forKeyedObjects(),
                PriorityComparator.forPriorityComparableObjects(),
                new KeyGroupPartitionedPriorityQueue.PartitionQueueSetFactory<
                        T, TaishanCachingPriorityQueueSet<T>>() {
                    @Nonnull
                    @Override
                    public TaishanCachingPriorityQueueSet<T> create(
                            int keyGroupId,
                            int numKeyGroups,
                            @Nonnull KeyExtractorFunction<T> keyExtractor,
                            @Nonnull PriorityComparator<T> elementPriorityComparator) {
                        return new TaishanCachingPriorityQueueSet<>(
                                TaishanKeyedStateBackend.this,
                                leaseOf(keyGroupId),
                                stateIdBytes,
                                keyGroupPrefixBytes,
                                byteOrderedElementSerializer,
                                timerCacheSize);
                    }
                },
                keyGroupRange,
                numberOfKeyGroups);
    }

    /**
     * Registers priority-queue meta info as RocksDB does: elements are stored as keys, so they
     * cannot be migrated, and only an incompatible serializer is rejected.
     */
    private <T> int registerPriorityQueue(
            String stateName, TypeSerializer<T> serializer, boolean allowFutureMetadataUpdates) {
        StateInfo info = states.get(stateName);
        if (info != null
                && !(info.metaInfo instanceof RegisteredPriorityQueueStateBackendMetaInfo)) {
            throw new IllegalStateException(
                    "State name '" + stateName + "' is already used by a keyed state.");
        }
        if (info != null) {
            @SuppressWarnings("unchecked")
            RegisteredPriorityQueueStateBackendMetaInfo<T> existing =
                    (RegisteredPriorityQueueStateBackendMetaInfo<T>) info.metaInfo;
            if (existing.getPreviousElementSerializer() == serializer) {
                return info.stateId;
            }
            TypeSerializerSchemaCompatibility<T> compatibility =
                    existing.updateElementSerializer(serializer);
            if (compatibility.isIncompatible()) {
                throw new FlinkRuntimeException(
                        new StateMigrationException(
                                "The new priority queue serializer must not be incompatible."));
            }
        }
        RegisteredPriorityQueueStateBackendMetaInfo<T> metaInfo =
                new RegisteredPriorityQueueStateBackendMetaInfo<>(stateName, serializer);
        if (allowFutureMetadataUpdates) {
            metaInfo = metaInfo.withSerializerUpgradesAllowed();
        }
        return register(metaInfo).stateId;
    }

    @Override
    public boolean requiresLegacySynchronousTimerSnapshots(SnapshotType checkpointType) {
        // Heap timers are written by the operator as raw keyed state, as RocksDB's HEAP timers;
        // native savepoints are checkpoints of ours, so they need them too.
        return heapTimers != null && !isCanonicalSavepoint(checkpointType);
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
                new TaishanSnapshotStrategy<>(
                        this, checkpointOptions.getCheckpointType().isSavepoint());
        return new SnapshotStrategyRunner<>(
                        strategy.getDescription(),
                        strategy,
                        cancelStreamRegistry,
                        SnapshotExecutionType.ASYNCHRONOUS)
                .snapshot(checkpointId, timestamp, streamFactory, checkpointOptions);
    }

    /**
     * The synchronous phase of a checkpoint: the meta info of every state, and a marker for {@code
     * snapshotId} in every owned shard's write stream. Nothing is waited for.
     */
    TaishanSnapshotStrategy.Resources prepareSnapshot(long snapshotId, boolean pinned) {
        if (states.isEmpty()) {
            return TaishanSnapshotStrategy.Resources.EMPTY;
        }
        writes.checkHealthy();
        if (snapshotId <= highestSnapshotId) {
            // Flink never reuses a checkpoint id in a job, but tests do; the store keeps the
            // first snapshot of an id, so drop ours before cutting it again.
            writes.flushAndWait();
            for (ShardLease lease : leases) {
                store.dropSnapshot(table, lease.shard(), snapshotId);
            }
        }
        highestSnapshotId = Math.max(highestSnapshotId, snapshotId);
        List<StateMetaInfoSnapshot> metaInfo = new ArrayList<>(states.size());
        for (StateInfo info : states.values()) {
            metaInfo.add(info.metaInfo.snapshot());
        }
        return new TaishanSnapshotStrategy.Resources(
                metaInfo,
                writes.snapshotMarkers(Arrays.asList(leases), snapshotId, pinned),
                System.nanoTime());
    }

    /**
     * A canonical savepoint. The shards are read live, so Flink runs it synchronously: nothing is
     * written while it is taken.
     */
    @Nonnull
    @Override
    public SavepointResources<K> savepoint() {
        writes.flushAndWait();
        List<StateMetaInfoSnapshot> metaInfo = new ArrayList<>(states.size());
        int[] stateIds = new int[states.size()];
        int i = 0;
        for (StateInfo info : states.values()) {
            metaInfo.add(info.metaInfo.snapshot());
            stateIds[i++] = info.stateId;
        }
        List<HeapPriorityQueueStateSnapshot<?>> heapQueues = new ArrayList<>();
        if (heapTimers != null) {
            for (HeapPriorityQueueSnapshotRestoreWrapper<?> queue :
                    heapTimers.getRegisteredPQStates().values()) {
                metaInfo.add(queue.getMetaInfo().snapshot());
                heapQueues.add(queue.stateSnapshot());
            }
        }
        return new SavepointResources<>(
                new TaishanFullSnapshotResources<>(
                        store,
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
    public void notifyCheckpointComplete(long checkpointId) {}

    @Override
    public void notifyCheckpointSubsumed(long checkpointId) {
        lastRelease = snapshotReleaser.onCheckpointSubsumed(checkpointId);
    }

    @Override
    public void notifyCheckpointAborted(long checkpointId) {
        lastRelease = snapshotReleaser.onCheckpointAborted(checkpointId);
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
        IOUtils.closeQuietly(writes);
        IOUtils.closeQuietly(connection);
        states.clear();
        createdStates.clear();
    }

    /** A registered state: its id in the store and Flink's meta info. */
    private static final class StateInfo {
        final int stateId;
        final RegisteredStateMetaInfoBase metaInfo;

        StateInfo(int stateId, RegisteredStateMetaInfoBase metaInfo) {
            this.stateId = stateId;
            this.metaInfo = Objects.requireNonNull(metaInfo);
        }
    }
}
