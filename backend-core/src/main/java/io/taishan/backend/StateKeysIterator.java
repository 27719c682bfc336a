package io.taishan.backend;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.ScanRange;
import io.taishan.kv.client.ShardLease;
import java.io.IOException;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import javax.annotation.Nullable;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.util.FlinkRuntimeException;

/**
 * The keys of some states over every owned shard, in key-group then byte order, read page by page
 * from the store (keys only), as Flink's {@code RocksStateKeysIterator} reads a column family.
 * Consecutive duplicates (a key with several namespaces or map entries) are returned once. State
 * may be changed while iterating: the pages are read from the store after the pending writes of the
 * moment have been flushed.
 */
final class StateKeysIterator<K, T> implements Iterator<T>, AutoCloseable {
    private static final int PAGE_SIZE = 1024;

    /** One state to read keys of. */
    record Source(int stateId, boolean ambiguousKeyPossible) {}

    /** Turns a stored key into an element, or null to skip it. */
    interface Decoder<K, T> {
        @Nullable
        T decode(
                K key,
                DataInputDeserializer positionedAfterKey,
                byte[] storeKey,
                boolean ambiguousKeyPossible)
                throws IOException;
    }

    private final TaishanKeyedStateBackend<K> backend;
    private final List<Source> sources;
    private final List<ShardLease> leases;
    private final Decoder<K, T> decoder;
    private final DataInputDeserializer in = new DataInputDeserializer();
    private final int keyStart;

    private int sourceIndex;
    private int leaseIndex;
    private boolean flushed;
    @Nullable private CloseableIterator<KvEntry> cursor;
    @Nullable private T next;
    @Nullable private T previous;

    StateKeysIterator(
            TaishanKeyedStateBackend<K> backend, List<Source> sources, Decoder<K, T> decoder) {
        this.backend = backend;
        this.sources = sources;
        this.leases = backend.leases();
        this.decoder = decoder;
        this.keyStart = StateKeys.STATE_ID_BYTES + backend.keyGroupPrefixBytes();
    }

    @Override
    public boolean hasNext() {
        try {
            while (next == null) {
                if (cursor == null && !openNextCursor()) {
                    return false;
                }
                if (!cursor.hasNext()) {
                    cursor.close();
                    cursor = null;
                    continue;
                }
                byte[] storeKey = cursor.next().key();
                boolean ambiguous = sources.get(sourceIndex).ambiguousKeyPossible();
                in.setBuffer(storeKey, keyStart, storeKey.length - keyStart);
                K key =
                        CompositeKeySerializationUtils.readKey(
                                backend.getKeySerializer(), in, ambiguous);
                T element = decoder.decode(key, in, storeKey, ambiguous);
                if (element != null && !Objects.equals(element, previous)) {
                    previous = element;
                    next = element;
                }
            }
            return true;
        } catch (IOException e) {
            throw new FlinkRuntimeException("Failed to read keys from the Taishan store", e);
        }
    }

    @Override
    public T next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        T result = next;
        next = null;
        return result;
    }

    private boolean openNextCursor() {
        if (!flushed) {
            backend.writes().flushAndWait();
            flushed = true;
        } else if (++leaseIndex >= leases.size()) {
            leaseIndex = 0;
            sourceIndex++;
        }
        if (sourceIndex >= sources.size() || leases.isEmpty()) {
            return false;
        }
        ShardLease lease = leases.get(leaseIndex);
        byte[] prefix =
                StateKeys.keyGroupPrefix(
                        StateKeys.stateIdBytes(sources.get(sourceIndex).stateId()),
                        lease.shard(),
                        backend.keyGroupPrefixBytes());
        cursor =
                Uninterruptibly.iterate(
                        () ->
                                backend.store()
                                        .scan(lease, ScanRange.prefix(prefix), PAGE_SIZE, true));
        return true;
    }

    @Override
    public void close() {
        if (cursor != null) {
            cursor.close();
            cursor = null;
        }
    }
}
