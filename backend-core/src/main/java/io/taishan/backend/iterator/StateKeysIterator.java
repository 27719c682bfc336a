package io.taishan.backend.iterator;

import io.taishan.backend.read.StateReader;
import io.taishan.backend.state.StateKeys;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.protocol.ScanRange;
import java.io.IOException;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import javax.annotation.Nullable;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.util.FlinkRuntimeException;

/**
 * The keys of some states over every owned shard, in key-group then byte order, read page by page
 * (keys only, the pending writes merged in), as Flink's {@code RocksStateKeysIterator} reads a
 * column family. Consecutive duplicates (a key with several namespaces or map entries) are returned
 * once. State may be changed while iterating: each page is read when it is needed, after the last
 * key of the previous one, so changes show as RocksDB's re-seeking iterator shows them.
 */
public final class StateKeysIterator<K, T> implements Iterator<T>, AutoCloseable {
    private static final int PAGE_SIZE = 1024;

    /** One state to read keys of. */
    public record Source(int stateId, boolean ambiguousKeyPossible) {}

    /** Turns a stored key into an element, or null to skip it. */
    public interface Decoder<K, T> {
        @Nullable
        T decode(
                K key,
                DataInputDeserializer positionedAfterKey,
                byte[] storeKey,
                boolean ambiguousKeyPossible)
                throws IOException;
    }

    private final StateReader reader;
    private final TypeSerializer<K> keySerializer;
    private final int keyGroupPrefixBytes;
    private final List<Source> sources;
    private final List<ShardLease> leases;
    private final Decoder<K, T> decoder;
    private final DataInputDeserializer in = new DataInputDeserializer();
    private final int keyStart;

    private int sourceIndex;
    private int leaseIndex = -1;
    private List<KvEntry> page = List.of();
    private int pageIndex;
    @Nullable private byte[] nextStart;
    private byte[] rangeEnd;
    @Nullable private T next;
    @Nullable private T previous;

    public StateKeysIterator(
            StateReader reader,
            TypeSerializer<K> keySerializer,
            int keyGroupPrefixBytes,
            List<ShardLease> leases,
            List<Source> sources,
            Decoder<K, T> decoder) {
        this.reader = reader;
        this.keySerializer = keySerializer;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.sources = sources;
        this.leases = leases;
        this.decoder = decoder;
        this.keyStart = StateKeys.STATE_ID_BYTES + keyGroupPrefixBytes;
    }

    @Override
    public boolean hasNext() {
        try {
            while (next == null) {
                if (pageIndex >= page.size() && !nextPage()) {
                    return false;
                }
                if (pageIndex >= page.size()) {
                    continue;
                }
                byte[] storeKey = page.get(pageIndex++).key();
                boolean ambiguous = sources.get(sourceIndex).ambiguousKeyPossible();
                in.setBuffer(storeKey, keyStart, storeKey.length - keyStart);
                K key = CompositeKeySerializationUtils.readKey(keySerializer, in, ambiguous);
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

    /** Reads the next page of the current range, or moves to the next range; false at the end. */
    private boolean nextPage() {
        while (nextStart == null) {
            if (++leaseIndex >= leases.size()) {
                leaseIndex = 0;
                sourceIndex++;
            }
            if (sourceIndex >= sources.size() || leases.isEmpty()) {
                return false;
            }
            byte[] prefix =
                    StateKeys.keyGroupPrefix(
                            StateKeys.stateIdBytes(sources.get(sourceIndex).stateId()),
                            leases.get(leaseIndex).shard(),
                            keyGroupPrefixBytes);
            nextStart = prefix;
            rangeEnd = ScanRange.prefixSuccessor(prefix);
        }
        StateReader.MergedPage merged =
                reader.scanPage(leases.get(leaseIndex), nextStart, rangeEnd, PAGE_SIZE, true);
        page = merged.entries();
        pageIndex = 0;
        nextStart = merged.next();
        return true;
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

    @Override
    public void close() {
        page = List.of();
        nextStart = null;
        sourceIndex = sources.size();
    }
}
