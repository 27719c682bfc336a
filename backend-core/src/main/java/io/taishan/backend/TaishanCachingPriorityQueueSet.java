package io.taishan.backend;

import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.ScanRange;
import io.taishan.kv.client.ShardLease;
import java.io.IOException;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.TreeSet;
import javax.annotation.Nonnull;
import javax.annotation.Nullable;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.InternalPriorityQueue;
import org.apache.flink.runtime.state.heap.AbstractHeapPriorityQueueElement;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueElement;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.FlinkRuntimeException;

/**
 * One key group's timers (priority-queue elements) in the store, ordered by their bytes, with the
 * first {@code cacheSize} held in memory; after Flink's {@code RocksDBCachingPriorityQueueSet}.
 *
 * <p>Store key: {@code [state id][key group][element bytes]}, empty value. The element serializer
 * orders bytes as priorities (a timer's timestamp comes first, sign bit flipped), so the head of
 * the set is its smallest key. Writes go through the write queue and never read; the store is read
 * only to refill an emptied cache, after a flush, starting behind the last element polled (the seek
 * hint). Invariant: every element not in the cache sorts after every cached element.
 */
final class TaishanCachingPriorityQueueSet<E extends HeapPriorityQueueElement>
        extends AbstractHeapPriorityQueueElement implements InternalPriorityQueue<E> {

    private static final byte[] EMPTY = {};

    private final TaishanKeyedStateBackend<?> backend;
    private final ShardLease lease;
    private final TypeSerializer<E> serializer;
    private final byte[] prefix;
    private final byte[] prefixEnd;
    private final int cacheSize;
    private final TreeSet<byte[]> cache = new TreeSet<>(Arrays::compareUnsigned);
    private final DataOutputSerializer out = new DataOutputSerializer(64);
    private final DataInputDeserializer in = new DataInputDeserializer();

    private byte[] seekHint;
    @Nullable private E peekCache;
    private boolean allElementsInCache;

    TaishanCachingPriorityQueueSet(
            TaishanKeyedStateBackend<?> backend,
            ShardLease lease,
            byte[] stateIdBytes,
            int keyGroupPrefixBytes,
            TypeSerializer<E> serializer,
            int cacheSize) {
        this.backend = backend;
        this.lease = lease;
        this.serializer = serializer;
        this.prefix = StateKeys.keyGroupPrefix(stateIdBytes, lease.shard(), keyGroupPrefixBytes);
        this.prefixEnd = ScanRange.prefixSuccessor(prefix);
        this.cacheSize = cacheSize;
        this.seekHint = prefix;
    }

    @Nullable
    @Override
    public E peek() {
        refillCacheIfNeeded();
        if (peekCache == null) {
            byte[] first = cache.isEmpty() ? null : cache.first();
            if (first != null) {
                peekCache = deserialize(first);
            }
        }
        return peekCache;
    }

    @Nullable
    @Override
    public E poll() {
        refillCacheIfNeeded();
        byte[] first = cache.pollFirst();
        if (first == null) {
            return null;
        }
        backend.writes().delete(lease, first);
        if (cache.isEmpty()) {
            seekHint = first;
        }
        E polled = peekCache != null ? peekCache : deserialize(first);
        peekCache = null;
        return polled;
    }

    @Override
    public boolean add(@Nonnull E toAdd) {
        refillCacheIfNeeded();
        byte[] bytes = serialize(toAdd);
        boolean cacheFull = cache.size() >= cacheSize;
        if ((!cacheFull && allElementsInCache)
                || (!cache.isEmpty() && Arrays.compareUnsigned(bytes, cache.last()) < 0)) {
            if (cacheFull) {
                cache.pollLast();
                allElementsInCache = false;
            }
            if (cache.add(bytes)) {
                backend.writes().put(lease, bytes, EMPTY);
                if (bytes == cache.first()) {
                    peekCache = null;
                    return true;
                }
            }
        } else {
            backend.writes().put(lease, bytes, EMPTY);
            allElementsInCache = false;
        }
        return false;
    }

    @Override
    public boolean remove(@Nonnull E toRemove) {
        refillCacheIfNeeded();
        byte[] oldHead = cache.isEmpty() ? null : cache.first();
        if (oldHead == null) {
            return false;
        }
        byte[] bytes = serialize(toRemove);
        backend.writes().delete(lease, bytes);
        cache.remove(bytes);
        if (cache.isEmpty()) {
            seekHint = bytes;
            peekCache = null;
            return true;
        }
        if (oldHead != cache.first()) {
            peekCache = null;
            return true;
        }
        return false;
    }

    @Override
    public void addAll(@Nullable Collection<? extends E> toAdd) {
        if (toAdd != null) {
            for (E element : toAdd) {
                add(element);
            }
        }
    }

    @Override
    public boolean isEmpty() {
        refillCacheIfNeeded();
        return cache.isEmpty();
    }

    @Override
    public int size() {
        if (allElementsInCache) {
            return cache.size();
        }
        int count = 0;
        try (StoreIterator it = new StoreIterator(true)) {
            while (it.hasNext()) {
                it.next();
                count++;
            }
        }
        return count;
    }

    @Nonnull
    @Override
    public CloseableIterator<E> iterator() {
        StoreIterator bytes = new StoreIterator(true);
        return new CloseableIterator<>() {
            @Override
            public boolean hasNext() {
                return bytes.hasNext();
            }

            @Override
            public E next() {
                return deserialize(bytes.next());
            }

            @Override
            public void close() {
                bytes.close();
            }
        };
    }

    private void refillCacheIfNeeded() {
        if (allElementsInCache || !cache.isEmpty()) {
            return;
        }
        List<KvEntry> page =
                backend.scanPage(lease, successor(seekHint), prefixEnd, cacheSize + 1, true);
        for (int i = 0; i < Math.min(cacheSize, page.size()); i++) {
            cache.add(page.get(i).key());
        }
        allElementsInCache = page.size() <= cacheSize;
    }

    private byte[] serialize(E element) {
        try {
            out.clear();
            out.write(prefix);
            serializer.serialize(element, out);
            return out.getCopyOfBuffer();
        } catch (IOException e) {
            throw new FlinkRuntimeException("Error while serializing the element.", e);
        }
    }

    private E deserialize(byte[] bytes) {
        try {
            in.setBuffer(bytes, prefix.length, bytes.length - prefix.length);
            return serializer.deserialize(in);
        } catch (IOException e) {
            throw new FlinkRuntimeException("Error while deserializing the element.", e);
        }
    }

    private static byte[] successor(byte[] key) {
        return Arrays.copyOf(key, key.length + 1);
    }

    /** The set's keys in order from the seek hint, page by page, after a flush. */
    private final class StoreIterator implements java.util.Iterator<byte[]>, AutoCloseable {
        private static final int PAGE = 256;
        private List<KvEntry> page = List.of();
        private int index;
        private boolean exhausted;
        private byte[] start;

        StoreIterator(boolean fromSeekHint) {
            this.start = fromSeekHint ? successor(seekHint) : prefix;
        }

        @Override
        public boolean hasNext() {
            if (index < page.size()) {
                return true;
            }
            if (exhausted) {
                return false;
            }
            page = backend.scanPage(lease, start, prefixEnd, PAGE, true);
            index = 0;
            exhausted = page.size() < PAGE;
            if (!page.isEmpty()) {
                start = successor(page.get(page.size() - 1).key());
            }
            return !page.isEmpty();
        }

        @Override
        public byte[] next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return page.get(index++).key();
        }

        @Override
        public void close() {
            page = List.of();
            exhausted = true;
        }
    }
}
