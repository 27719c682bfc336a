package io.taishan.backend.state;

import io.taishan.backend.flink.StateMetaInfos;
import io.taishan.backend.read.StateReader;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.protocol.ScanRange;
import java.io.IOException;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import javax.annotation.Nullable;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.queryablestate.client.state.serialization.KvStateSerializer;
import org.apache.flink.runtime.state.internal.InternalMapState;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.Preconditions;
import org.apache.flink.util.StateMigrationException;

/**
 * {@code MapState}: one entry per user key, {@code [..namespace][user key] -> [isNull][value]} as
 * in RocksDB. Iteration reads pages of the shard in key order with the pending writes merged in, a
 * fresh page after the last key seen, as RocksDB's map iterator re-seeks its database; {@link
 * #clear} is one range delete. Entries are cached under their map's generation (see {@link
 * io.taishan.backend.read.ReadCache}), so a clear makes them all unreachable at once.
 */
final class TaishanMapState<K, N, UK, UV> extends AbstractTaishanState<K, N, Map<UK, UV>>
        implements InternalMapState<K, N, UK, UV> {

    private static final int PAGE_SIZE = 128;

    private TypeSerializer<UK> userKeySerializer;
    private TypeSerializer<UV> userValueSerializer;

    /** The length of the current key and namespace's prefix, valid for the two below. */
    private int prefixLength = -1;

    private long prefixKeyVersion;
    private Object prefixNamespace;

    TaishanMapState(
            StateContext<K> context,
            int stateId,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<Map<UK, UV>> valueSerializer,
            Map<UK, UV> defaultValue) {
        super(context, stateId, namespaceSerializer, valueSerializer, defaultValue);
        MapSerializer<UK, UV> mapSerializer = (MapSerializer<UK, UV>) valueSerializer;
        this.userKeySerializer = mapSerializer.getKeySerializer();
        this.userValueSerializer = mapSerializer.getValueSerializer();
    }

    @Override
    public UV get(UK userKey) throws IOException {
        byte[] bytes = readEntry(currentKeyWithUserKey(userKey, userKeySerializer));
        return bytes == null ? null : deserializeUserValue(bytes, userValueSerializer);
    }

    @Override
    public void put(UK userKey, UV userValue) throws IOException {
        context.writer()
                .put(
                        currentLease(),
                        currentKeyWithUserKey(userKey, userKeySerializer),
                        serializeNullable(userValue, userValueSerializer),
                        cachePolicy,
                        mapPrefixLength());
    }

    @Nullable
    private byte[] readEntry(byte[] entryKey) {
        return context.reader().get(currentLease(), entryKey, cachePolicy, mapPrefixLength());
    }

    /** {@code [state id][key group][key][namespace]}'s length for the current key and namespace. */
    private int mapPrefixLength() {
        long keyVersion = context.currentKeyVersion();
        if (prefixLength < 0
                || keyVersion != prefixKeyVersion
                || prefixNamespace != currentNamespace) {
            prefixLength = currentKey().length;
            prefixKeyVersion = keyVersion;
            prefixNamespace = currentNamespace;
        }
        return prefixLength;
    }

    @Override
    public void putAll(Map<UK, UV> map) throws IOException {
        if (map == null) {
            return;
        }
        for (Map.Entry<UK, UV> entry : map.entrySet()) {
            put(entry.getKey(), entry.getValue());
        }
    }

    @Override
    public void remove(UK userKey) throws IOException {
        context.writer()
                .delete(
                        currentLease(),
                        currentKeyWithUserKey(userKey, userKeySerializer),
                        cachePolicy,
                        mapPrefixLength());
    }

    @Override
    public boolean contains(UK userKey) throws IOException {
        return readEntry(currentKeyWithUserKey(userKey, userKeySerializer)) != null;
    }

    @Override
    public Iterable<Map.Entry<UK, UV>> entries() {
        return this::iterator;
    }

    @Override
    public Iterable<UK> keys() {
        return () -> new MappingIterator<>(newEntryIterator(), Map.Entry::getKey);
    }

    @Override
    public Iterable<UV> values() {
        return () -> new MappingIterator<>(newEntryIterator(), Map.Entry::getValue);
    }

    @Override
    public Iterator<Map.Entry<UK, UV>> iterator() {
        return newEntryIterator();
    }

    @Override
    public boolean isEmpty() {
        return !newEntryIterator().hasNext();
    }

    @Override
    public void clear() {
        byte[] prefix = currentKey();
        context.writer().clearMap(currentLease(), prefix, ScanRange.prefixSuccessor(prefix));
    }

    @Override
    public byte[] getSerializedValue(
            byte[] serializedKeyAndNamespace,
            TypeSerializer<K> safeKeySerializer,
            TypeSerializer<N> safeNamespaceSerializer,
            TypeSerializer<Map<UK, UV>> safeValueSerializer)
            throws Exception {
        Preconditions.checkNotNull(serializedKeyAndNamespace);
        QueriedKey queried =
                queriedKey(serializedKeyAndNamespace, safeKeySerializer, safeNamespaceSerializer);
        MapSerializer<UK, UV> serializer = (MapSerializer<UK, UV>) safeValueSerializer;
        EntryIterator<UK, UV> iterator =
                new EntryIterator<>(
                        this,
                        queried.lease(),
                        queried.storeKey(),
                        serializer.getKeySerializer(),
                        serializer.getValueSerializer(),
                        false);
        if (!iterator.hasNext()) {
            return null;
        }
        return KvStateSerializer.serializeMap(
                () -> iterator, serializer.getKeySerializer(), serializer.getValueSerializer());
    }

    @Override
    public void migrateSerializedValue(
            DataInputDeserializer serializedOldValueInput,
            DataOutputSerializer serializedMigratedValueOutput,
            TypeSerializer<Map<UK, UV>> priorSerializer,
            TypeSerializer<Map<UK, UV>> newSerializer,
            TtlTimeProvider ttlTimeProvider)
            throws StateMigrationException {
        Preconditions.checkArgument(priorSerializer instanceof MapSerializer);
        Preconditions.checkArgument(newSerializer instanceof MapSerializer);
        TypeSerializer<UV> priorValueSerializer =
                ((MapSerializer<UK, UV>) priorSerializer).getValueSerializer();
        TypeSerializer<UV> newValueSerializer =
                ((MapSerializer<UK, UV>) newSerializer).getValueSerializer();
        try {
            boolean isNull = serializedOldValueInput.readBoolean();
            serializedMigratedValueOutput.writeBoolean(isNull);
            if (!isNull) {
                StateMetaInfos.migrateValue(
                        priorValueSerializer,
                        newValueSerializer,
                        () -> priorValueSerializer.deserialize(serializedOldValueInput),
                        serializedMigratedValueOutput,
                        ttlTimeProvider);
            }
        } catch (Exception e) {
            throw new StateMigrationException("Error while trying to migrate map state.", e);
        }
    }

    @Override
    TaishanMapState<K, N, UK, UV> setValueSerializer(TypeSerializer<Map<UK, UV>> valueSerializer) {
        super.setValueSerializer(valueSerializer);
        MapSerializer<UK, UV> mapSerializer = (MapSerializer<UK, UV>) valueSerializer;
        this.userKeySerializer = mapSerializer.getKeySerializer();
        this.userValueSerializer = mapSerializer.getValueSerializer();
        return this;
    }

    private EntryIterator<UK, UV> newEntryIterator() {
        return new EntryIterator<>(
                this, currentLease(), currentKey(), userKeySerializer, userValueSerializer, true);
    }

    private <T> byte[] serializeNullable(T value, TypeSerializer<T> serializer) throws IOException {
        dataOutputView.clear();
        dataOutputView.writeBoolean(value == null);
        if (value != null) {
            serializer.serialize(value, dataOutputView);
        }
        return dataOutputView.getCopyOfBuffer();
    }

    private static <UV> UV deserializeUserValue(byte[] bytes, TypeSerializer<UV> serializer)
            throws IOException {
        DataInputDeserializer in = new DataInputDeserializer(bytes);
        return in.readBoolean() ? null : serializer.deserialize(in);
    }

    /**
     * The entries under one key and namespace, a page at a time; each page starts after the last
     * key seen, so writes made while iterating (including through the entries) are seen as
     * RocksDB's re-seeking iterator sees them. A small map the read cache lists whole is one page
     * with no round trip, and a map read whole in one page is offered to the cache to list.
     */
    private static final class EntryIterator<UK, UV> implements Iterator<Map.Entry<UK, UV>> {
        private final TaishanMapState<?, ?, UK, UV> state;
        private final ShardLease lease;
        private final byte[] prefix;
        private final byte[] end;
        private final TypeSerializer<UK> keySerializer;
        private final TypeSerializer<UV> valueSerializer;

        /** On the task thread: may read and fill the cache's listing of the map. */
        private final boolean taskThread;

        private List<KvEntry> page = List.of();
        private int index;
        @Nullable private byte[] nextStart;
        private Entry current;

        EntryIterator(
                TaishanMapState<?, ?, UK, UV> state,
                ShardLease lease,
                byte[] prefix,
                TypeSerializer<UK> keySerializer,
                TypeSerializer<UV> valueSerializer,
                boolean taskThread) {
            this.state = state;
            this.taskThread = taskThread;
            this.lease = lease;
            this.prefix = prefix;
            this.end = ScanRange.prefixSuccessor(prefix);
            this.keySerializer = keySerializer;
            this.valueSerializer = valueSerializer;
            this.nextStart = prefix;
        }

        @Override
        public boolean hasNext() {
            while (index >= page.size()) {
                if (nextStart == null) {
                    return false;
                }
                StateReader reader = state.context.reader();
                boolean whole = taskThread && nextStart == prefix;
                if (whole) {
                    List<KvEntry> listed = reader.cachedMap(lease, prefix, state.cachePolicy);
                    if (listed == null && reader.mapSurelyEmpty(lease, prefix)) {
                        listed = List.of();
                    }
                    if (listed != null) {
                        page = listed;
                        index = 0;
                        nextStart = null;
                        continue;
                    }
                }
                StateReader.MergedPage merged =
                        reader.scanPage(lease, nextStart, end, PAGE_SIZE, false);
                page = merged.entries();
                index = 0;
                // Every page starts past the last key the previous one covered, so writes made
                // meanwhile show as RocksDB's re-seeking iterator shows them.
                nextStart = merged.next();
                if (whole && nextStart == null) {
                    reader.mapScanned(lease, prefix, page, state.cachePolicy);
                }
            }
            return true;
        }

        @Override
        public Map.Entry<UK, UV> next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            KvEntry kv = page.get(index++);
            current = new Entry(kv.key(), kv.value());
            return current;
        }

        @Override
        public void remove() {
            if (current == null || current.deleted) {
                throw new IllegalStateException(
                        "The remove operation must be called after a valid next operation.");
            }
            current.remove();
        }

        private final class Entry implements Map.Entry<UK, UV> {
            private final byte[] rawKey;
            private byte[] rawValue;
            private boolean deleted;
            private UK userKey;
            private UV userValue;

            Entry(byte[] rawKey, byte[] rawValue) {
                this.rawKey = rawKey;
                this.rawValue = rawValue;
            }

            void remove() {
                deleted = true;
                rawValue = null;
                state.context.writer().delete(lease, rawKey, state.cachePolicy, prefix.length);
            }

            @Override
            public UK getKey() {
                if (userKey == null) {
                    try {
                        DataInputDeserializer in =
                                new DataInputDeserializer(
                                        rawKey, prefix.length, rawKey.length - prefix.length);
                        userKey = keySerializer.deserialize(in);
                    } catch (IOException e) {
                        throw new FlinkRuntimeException(
                                "Error while deserializing the user key.", e);
                    }
                }
                return userKey;
            }

            @Override
            public UV getValue() {
                if (deleted) {
                    return null;
                }
                if (userValue == null) {
                    try {
                        userValue = deserializeUserValue(rawValue, valueSerializer);
                    } catch (IOException e) {
                        throw new FlinkRuntimeException(
                                "Error while deserializing the user value.", e);
                    }
                }
                return userValue;
            }

            @Override
            public UV setValue(UV value) {
                if (deleted) {
                    throw new IllegalStateException("The value has already been deleted.");
                }
                UV old = getValue();
                try {
                    userValue = value;
                    rawValue = state.serializeNullable(value, valueSerializer);
                } catch (IOException e) {
                    throw new FlinkRuntimeException("Error while serializing the user value.", e);
                }
                state.context
                        .writer()
                        .put(lease, rawKey, rawValue, state.cachePolicy, prefix.length);
                return old;
            }

            @Override
            public boolean equals(Object o) {
                if (!(o instanceof Map.Entry)) {
                    return false;
                }
                Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
                return Objects.equals(getKey(), e.getKey())
                        && Objects.equals(getValue(), e.getValue());
            }

            @Override
            public int hashCode() {
                return Objects.hashCode(getKey()) ^ Objects.hashCode(getValue());
            }
        }
    }

    /** An iterator that maps another's elements and passes removal through. */
    private static final class MappingIterator<F, T> implements Iterator<T> {
        private final Iterator<F> source;
        private final java.util.function.Function<F, T> mapping;

        MappingIterator(Iterator<F> source, java.util.function.Function<F, T> mapping) {
            this.source = source;
            this.mapping = mapping;
        }

        @Override
        public boolean hasNext() {
            return source.hasNext();
        }

        @Override
        public T next() {
            return mapping.apply(source.next());
        }

        @Override
        public void remove() {
            source.remove();
        }
    }
}
