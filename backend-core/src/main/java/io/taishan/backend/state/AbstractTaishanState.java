package io.taishan.backend.state;

import io.taishan.backend.flink.StateMetaInfos;
import io.taishan.backend.read.CachePolicy;
import io.taishan.kv.client.ShardLease;
import java.io.IOException;
import javax.annotation.Nullable;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.queryablestate.client.state.serialization.KvStateSerializer;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.apache.flink.runtime.state.internal.InternalKvState;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.StateMigrationException;

/**
 * Base of the Taishan states, after Flink's {@code AbstractRocksDBState}: keys and values in
 * RocksDB's byte layout, behind the state id, read through the subtask's {@link
 * io.taishan.backend.read.StateReader} and written through its {@link
 * io.taishan.backend.write.StateWriter}.
 */
public abstract class AbstractTaishanState<K, N, V> implements InternalKvState<K, N, V>, State {
    protected final StateContext<K> context;
    protected final byte[] stateIdBytes;
    protected CachePolicy cachePolicy = CachePolicy.VALUES;
    protected TypeSerializer<N> namespaceSerializer;
    protected TypeSerializer<V> valueSerializer;
    @Nullable protected V defaultValue;
    protected N currentNamespace;

    protected final DataOutputSerializer dataOutputView = new DataOutputSerializer(128);
    protected final DataInputDeserializer dataInputView = new DataInputDeserializer();
    private final SerializedCompositeKeyBuilder<K> sharedKeyBuilder;

    protected AbstractTaishanState(
            StateContext<K> context,
            int stateId,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<V> valueSerializer,
            @Nullable V defaultValue) {
        this.context = context;
        this.stateIdBytes = StateKeys.stateIdBytes(stateId);
        this.namespaceSerializer = namespaceSerializer;
        this.valueSerializer = valueSerializer;
        this.defaultValue = defaultValue;
        this.sharedKeyBuilder = context.sharedKeyBuilder();
    }

    @Override
    public TypeSerializer<K> getKeySerializer() {
        return context.keySerializer();
    }

    @Override
    public TypeSerializer<N> getNamespaceSerializer() {
        return namespaceSerializer;
    }

    @Override
    public TypeSerializer<V> getValueSerializer() {
        return valueSerializer;
    }

    @Override
    public void setCurrentNamespace(N namespace) {
        this.currentNamespace = namespace;
    }

    @Override
    public void clear() {
        delete(currentKey());
    }

    @Override
    public byte[] getSerializedValue(
            byte[] serializedKeyAndNamespace,
            TypeSerializer<K> safeKeySerializer,
            TypeSerializer<N> safeNamespaceSerializer,
            TypeSerializer<V> safeValueSerializer)
            throws Exception {
        QueriedKey queried =
                queriedKey(serializedKeyAndNamespace, safeKeySerializer, safeNamespaceSerializer);
        return context.reader().getFromAnyThread(queried.lease(), queried.storeKey());
    }

    /** Where a queryable-state request's key and namespace live: its shard and store key. */
    QueriedKey queriedKey(
            byte[] serializedKeyAndNamespace,
            TypeSerializer<K> safeKeySerializer,
            TypeSerializer<N> safeNamespaceSerializer)
            throws IOException {
        Tuple2<K, N> keyAndNamespace =
                KvStateSerializer.deserializeKeyAndNamespace(
                        serializedKeyAndNamespace, safeKeySerializer, safeNamespaceSerializer);
        int keyGroup =
                KeyGroupRangeAssignment.assignToKeyGroup(
                        keyAndNamespace.f0, context.numberOfKeyGroups());
        // The caller's serializers, not the state's: queries come from other threads.
        SerializedCompositeKeyBuilder<K> keyBuilder =
                new SerializedCompositeKeyBuilder<>(
                        safeKeySerializer, context.keyGroupPrefixBytes(), 32);
        keyBuilder.setKeyAndKeyGroup(keyAndNamespace.f0, keyGroup);
        byte[] key =
                StateKeys.storeKey(
                        stateIdBytes,
                        keyBuilder.buildCompositeKeyNamespace(
                                keyAndNamespace.f1, safeNamespaceSerializer));
        return new QueriedKey(context.leaseOf(keyGroup), key);
    }

    record QueriedKey(ShardLease lease, byte[] storeKey) {}

    @Override
    public StateIncrementalVisitor<K, N, V> getStateIncrementalVisitor(
            int recommendedMaxNumberOfReturnedRecords) {
        throw new UnsupportedOperationException(
                "Incremental TTL cleanup is not supported by the Taishan state backend");
    }

    /** Re-encodes one stored value from the prior serializer's format into the new one's. */
    public void migrateSerializedValue(
            DataInputDeserializer serializedOldValueInput,
            DataOutputSerializer serializedMigratedValueOutput,
            TypeSerializer<V> priorSerializer,
            TypeSerializer<V> newSerializer,
            TtlTimeProvider ttlTimeProvider)
            throws StateMigrationException {
        try {
            StateMetaInfos.migrateValue(
                    priorSerializer,
                    newSerializer,
                    () -> priorSerializer.deserialize(serializedOldValueInput),
                    serializedMigratedValueOutput,
                    ttlTimeProvider);
        } catch (Exception e) {
            throw new StateMigrationException("Error while trying to migrate Taishan state.", e);
        }
    }

    // ---- keys and values

    /** {@code [state id][key group][key][namespace]} of the current key and namespace. */
    byte[] currentKey() {
        return StateKeys.storeKey(
                stateIdBytes,
                sharedKeyBuilder.buildCompositeKeyNamespace(currentNamespace, namespaceSerializer));
    }

    <UK> byte[] currentKeyWithUserKey(UK userKey, TypeSerializer<UK> userKeySerializer)
            throws IOException {
        return StateKeys.storeKey(
                stateIdBytes,
                sharedKeyBuilder.buildCompositeKeyNamesSpaceUserKey(
                        currentNamespace, namespaceSerializer, userKey, userKeySerializer));
    }

    ShardLease currentLease() {
        return context.currentLease();
    }

    /** The current value of a key of this state (not of a map's entries), or null. */
    @Nullable
    byte[] read(byte[] key) {
        return context.reader().get(currentLease(), key, cachePolicy, 0);
    }

    void write(byte[] key, byte[] value) {
        context.writer().put(currentLease(), key, value, cachePolicy, 0);
    }

    void delete(byte[] key) {
        context.writer().delete(currentLease(), key, cachePolicy, 0);
    }

    void append(byte[] key, byte[] operand) {
        context.writer().append(currentLease(), key, operand, cachePolicy, 0);
    }

    byte[] serializeValue(V value) {
        return serializeValue(value, valueSerializer);
    }

    <T> byte[] serializeValue(T value, TypeSerializer<T> serializer) {
        try {
            dataOutputView.clear();
            serializer.serialize(value, dataOutputView);
            return dataOutputView.getCopyOfBuffer();
        } catch (IOException e) {
            throw new FlinkRuntimeException("Error while serializing a value", e);
        }
    }

    V deserializeValue(byte[] bytes) throws IOException {
        dataInputView.setBuffer(bytes);
        return valueSerializer.deserialize(dataInputView);
    }

    @Nullable
    protected V getDefaultValue() {
        return defaultValue == null ? null : valueSerializer.copy(defaultValue);
    }

    /** How the state's entries go through the read cache; set once, at creation. */
    AbstractTaishanState<K, N, V> setCachePolicy(CachePolicy policy) {
        this.cachePolicy = policy;
        return this;
    }

    AbstractTaishanState<K, N, V> setNamespaceSerializer(TypeSerializer<N> namespaceSerializer) {
        this.namespaceSerializer = namespaceSerializer;
        return this;
    }

    AbstractTaishanState<K, N, V> setValueSerializer(TypeSerializer<V> valueSerializer) {
        this.valueSerializer = valueSerializer;
        return this;
    }

    AbstractTaishanState<K, N, V> setDefaultValue(@Nullable V defaultValue) {
        this.defaultValue = defaultValue;
        return this;
    }
}
