package io.taishan.backend.state;

import io.taishan.backend.flink.StateMetaInfos;
import java.io.IOException;
import java.util.Collection;
import java.util.List;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.ListDelimitedSerializer;
import org.apache.flink.runtime.state.internal.InternalListState;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.Preconditions;
import org.apache.flink.util.StateMigrationException;

/**
 * {@code ListState}: the elements joined by ',' in one value, as RocksDB's list state stores them;
 * {@link #add} is a blind server-side append.
 */
final class TaishanListState<K, N, V> extends AbstractTaishanState<K, N, List<V>>
        implements InternalListState<K, N, V> {

    private static final byte DELIMITER = ',';

    private TypeSerializer<V> elementSerializer;
    private final ListDelimitedSerializer listSerializer = new ListDelimitedSerializer();

    TaishanListState(
            StateContext<K> context,
            int stateId,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<List<V>> valueSerializer,
            List<V> defaultValue) {
        super(context, stateId, namespaceSerializer, valueSerializer, defaultValue);
        this.elementSerializer = ((ListSerializer<V>) valueSerializer).getElementSerializer();
    }

    @Override
    public Iterable<V> get() throws IOException {
        return getInternal();
    }

    @Override
    public List<V> getInternal() throws IOException {
        return listSerializer.deserializeList(read(currentKey()), elementSerializer);
    }

    @Override
    public void add(V value) {
        Preconditions.checkNotNull(value, "You cannot add null to a ListState.");
        append(currentKey(), serializeValue(value, elementSerializer));
    }

    @Override
    public void addAll(List<V> values) throws IOException {
        Preconditions.checkNotNull(values, "List of values to add cannot be null.");
        if (!values.isEmpty()) {
            append(currentKey(), listSerializer.serializeList(values, elementSerializer));
        }
    }

    @Override
    public void update(List<V> values) throws IOException {
        updateInternal(values);
    }

    @Override
    public void updateInternal(List<V> values) throws IOException {
        Preconditions.checkNotNull(values, "List of values to add cannot be null.");
        if (values.isEmpty()) {
            clear();
        } else {
            write(currentKey(), listSerializer.serializeList(values, elementSerializer));
        }
    }

    @Override
    public void mergeNamespaces(N target, Collection<N> sources) {
        if (sources == null || sources.isEmpty()) {
            return;
        }
        try {
            setCurrentNamespace(target);
            byte[] targetKey = currentKey();
            for (N source : sources) {
                if (source != null) {
                    setCurrentNamespace(source);
                    byte[] sourceKey = currentKey();
                    byte[] bytes = read(sourceKey);
                    if (bytes != null) {
                        delete(sourceKey);
                        append(targetKey, bytes);
                    }
                }
            }
        } catch (Exception e) {
            throw new FlinkRuntimeException("Error while merging list state", e);
        }
    }

    @Override
    public void migrateSerializedValue(
            DataInputDeserializer serializedOldValueInput,
            DataOutputSerializer serializedMigratedValueOutput,
            TypeSerializer<List<V>> priorSerializer,
            TypeSerializer<List<V>> newSerializer,
            TtlTimeProvider ttlTimeProvider)
            throws StateMigrationException {
        Preconditions.checkArgument(priorSerializer instanceof ListSerializer);
        Preconditions.checkArgument(newSerializer instanceof ListSerializer);
        TypeSerializer<V> priorElementSerializer =
                ((ListSerializer<V>) priorSerializer).getElementSerializer();
        TypeSerializer<V> newElementSerializer =
                ((ListSerializer<V>) newSerializer).getElementSerializer();
        try {
            while (serializedOldValueInput.available() > 0) {
                StateMetaInfos.migrateValue(
                        priorElementSerializer,
                        newElementSerializer,
                        () ->
                                ListDelimitedSerializer.deserializeNextElement(
                                        serializedOldValueInput, priorElementSerializer),
                        serializedMigratedValueOutput,
                        ttlTimeProvider);
                if (serializedOldValueInput.available() > 0) {
                    serializedMigratedValueOutput.write(DELIMITER);
                }
            }
        } catch (Exception e) {
            throw new StateMigrationException("Error while trying to migrate list state.", e);
        }
    }

    @Override
    TaishanListState<K, N, V> setValueSerializer(TypeSerializer<List<V>> valueSerializer) {
        super.setValueSerializer(valueSerializer);
        this.elementSerializer = ((ListSerializer<V>) valueSerializer).getElementSerializer();
        return this;
    }
}
