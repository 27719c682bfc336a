package io.taishan.backend.state;

import io.taishan.backend.read.CachePolicy;
import io.taishan.backend.read.StateReader;
import io.taishan.backend.ttl.ServerSideExpiry;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.protocol.ScanRange;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializerSnapshot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.StateSnapshotTransformer.StateSnapshotTransformFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.StateMigrationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates and updates the keyed states of one backend, as Flink's RocksDB backend does in its
 * {@code createOrUpdateInternalState}: registers the meta info (checking a restored state's
 * serializers for compatibility, migrating its stored values when the new serializer needs it),
 * then makes the state object of the descriptor's type, or updates the existing one, with its
 * {@link CachePolicy}.
 */
public final class TaishanStateFactory<K> {
    private static final Logger LOG = LoggerFactory.getLogger(TaishanStateFactory.class);

    private static final int MIGRATION_PAGE_SIZE = 1024;

    private final StateContext<K> context;
    private final RegisteredStates registered;
    private final List<ShardLease> leases;
    private final boolean cacheEnabled;
    private final String table;
    private final ServerSideExpiry expiry;
    private final Map<String, State> created = new HashMap<>();

    /** The clock of values that turning TTL on wraps during a migration. */
    private final TtlTimeProvider ttlTimeProvider;

    public TaishanStateFactory(
            StateContext<K> context,
            RegisteredStates registered,
            List<ShardLease> leases,
            boolean cacheEnabled,
            String table,
            ServerSideExpiry expiry,
            TtlTimeProvider ttlTimeProvider) {
        this.context = context;
        this.ttlTimeProvider = ttlTimeProvider;
        this.expiry = expiry;
        this.registered = registered;
        this.leases = leases;
        this.cacheEnabled = cacheEnabled;
        this.table = table;
    }

    public <N, SV, SEV, S extends State, IS extends S> IS createOrUpdate(
            TypeSerializer<N> namespaceSerializer,
            StateDescriptor<S, SV> stateDesc,
            StateSnapshotTransformFactory<SEV> snapshotTransformFactory,
            boolean allowFutureMetadataUpdates)
            throws Exception {
        RegisteredStates.Info info = registered.get(stateDesc.getName());
        RegisteredKeyValueStateBackendMetaInfo<N, SV> metaInfo;
        if (info != null) {
            if (!info.isKeyValue()) {
                throw new IllegalStateException(
                        "State name '"
                                + stateDesc.getName()
                                + "' is already used by a priority queue state.");
            }
            @SuppressWarnings("unchecked")
            RegisteredKeyValueStateBackendMetaInfo<N, SV> existing =
                    (RegisteredKeyValueStateBackendMetaInfo<N, SV>) info.metaInfo();
            metaInfo = updateMetaInfo(info.stateId(), existing, stateDesc, namespaceSerializer);
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
        info = registered.register(metaInfo);
        expiry.registered(info.stateId(), stateDesc);
        return createState(stateDesc, info.stateId(), metaInfo);
    }

    /** How the entries of a state of this descriptor may be cached. */
    CachePolicy cachePolicy(StateDescriptor<?, ?> stateDesc) {
        if (!cacheEnabled) {
            return CachePolicy.UNCACHED;
        }
        StateTtlConfig ttl = stateDesc.getTtlConfig();
        long ttlMillis = ttl.isEnabled() ? Math.max(1, ttl.getTimeToLive().toMillis()) : 0;
        switch (stateDesc.getType()) {
            case MAP:
                return ttlMillis > 0
                        ? CachePolicy.mapEntriesWithTtl(ttlMillis)
                        : CachePolicy.MAP_ENTRIES;
            case LIST:
                return ttlMillis > 0 ? CachePolicy.UNCACHED : CachePolicy.VALUES;
            default:
                return ttlMillis > 0 ? CachePolicy.valuesWithTtl(ttlMillis) : CachePolicy.VALUES;
        }
    }

    public void clear() {
        created.clear();
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
        StateReader reader = context.reader();
        for (ShardLease lease : leases) {
            byte[] prefix =
                    StateKeys.keyGroupPrefix(
                            stateIdBytes, lease.shard(), context.keyGroupPrefixBytes());
            byte[] end = ScanRange.prefixSuccessor(prefix);
            byte[] start = prefix;
            while (start != null) {
                StateReader.MergedPage page =
                        reader.scanPage(lease, start, end, MIGRATION_PAGE_SIZE, false);
                for (KvEntry entry : page.entries()) {
                    oldValue.setBuffer(entry.value());
                    newValue.clear();
                    state.migrateSerializedValue(
                            oldValue,
                            newValue,
                            metaInfo.getPreviousStateSerializer(),
                            metaInfo.getStateSerializer(),
                            ttlTimeProvider);
                    // Not cached: migration runs when a restored state is first registered, so
                    // this backend's cache has never held an entry of it.
                    context.writer()
                            .put(
                                    lease,
                                    entry.key(),
                                    newValue.getCopyOfBuffer(),
                                    CachePolicy.UNCACHED,
                                    0);
                }
                start = page.next();
            }
        }
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
        State existing = created.get(stateDesc.getName());
        IS state;
        if (existing == null) {
            state = (IS) newState(stateDesc, stateId, metaInfo);
        } else {
            state = (IS) updateState(existing, stateDesc, metaInfo);
        }
        created.put(stateDesc.getName(), state);
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
        AbstractTaishanState state;
        switch (stateDesc.getType()) {
            case VALUE:
                state = new TaishanValueState<>(context, stateId, ns, values, defaultValue);
                break;
            case LIST:
                state = new TaishanListState(context, stateId, ns, values, (List) defaultValue);
                break;
            case MAP:
                state = new TaishanMapState(context, stateId, ns, values, (Map) defaultValue);
                break;
            case REDUCING:
                state =
                        new TaishanReducingState<>(
                                context,
                                stateId,
                                ns,
                                values,
                                defaultValue,
                                ((ReducingStateDescriptor<SV>) stateDesc).getReduceFunction());
                break;
            case AGGREGATING:
                state =
                        new TaishanAggregatingState<>(
                                context,
                                stateId,
                                ns,
                                values,
                                defaultValue,
                                ((AggregatingStateDescriptor) stateDesc).getAggregateFunction());
                break;
            default:
                throw new FlinkRuntimeException(
                        String.format(
                                "State %s is not supported by the Taishan state backend",
                                stateDesc.getClass()));
        }
        return state.setCachePolicy(cachePolicy(stateDesc));
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
}
