package io.taishan.backend.timers;

import io.taishan.backend.read.StateReader;
import io.taishan.backend.state.StateKeys;
import io.taishan.backend.write.StateWriter;
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
 * only to refill an emptied cache, with the pending writes merged in, starting behind the last
 * element polled (the seek hint). Invariant: every element not in the cache sorts after every
 * cached element.
 */
public final class TaishanCachingPriorityQueueSet<E extends HeapPriorityQueueElement>
        extends AbstractHeapPriorityQueueElement implements InternalPriorityQueue<E> {

    private static final byte[] EMPTY = {};

    private static final int ITERATION_PAGE = 256;

    private final StateReader reader;
    private final StateWriter writer;
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

    public TaishanCachingPriorityQueueSet(
            StateReader reader,
            StateWriter writer,
            ShardLease lease,
            byte[] stateIdBytes,
            int keyGroupPrefixBytes,
            TypeSerializer<E> serializer,
            int cacheSize) {
        this.reader = reader;
        this.writer = writer;
        this.lease = lease;
        this.serializer = serializer;
        this.prefix = StateKeys.keyGroupPrefix(stateIdBytes, lease.shard(), keyGroupPrefixBytes);
        this.prefixEnd = ScanRange.prefixSuccessor(prefix);
        this.cacheSize = cacheSize;
        this.seekHint = prefix;
    }

    ShardLease lease() {
        return lease;
    }

    /** Where the set's keys are: {@code [prefix, rangeEnd)}. */
    byte[] rangeStart() {
        return prefix;
    }

    byte[] rangeEnd() {
        return prefixEnd;
    }

    /** Before any use: the shard started empty, so has no element. */
    void startEmpty() {
        allElementsInCache = true;
    }

    /**
     * Before any use: the first page of the set's keys (up to {@code cacheSize + 1}, from the start
     * of its range), read for many sets at once, in place of the first refill.
     */
    void prefill(StateReader.MergedPage first) {
        List<KvEntry> entries = first.entries();
        for (int i = 0; i < entries.size() && i < cacheSize; i++) {
            cache.add(entries.get(i).key());
        }
        allElementsInCache = first.next() == null && entries.size() <= cacheSize;
    }

    int cacheSize() {
        return cacheSize;
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
        writer.deleteUnread(lease, first);
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
                writer.putUnread(lease, bytes, EMPTY);
                if (bytes == cache.first()) {
                    peekCache = null;
                    return true;
                }
            }
        } else {
            writer.putUnread(lease, bytes, EMPTY);
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
        writer.deleteUnread(lease, bytes);
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
        try (StoreIterator it = new StoreIterator(true, ITERATION_PAGE)) {
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
        StoreIterator bytes = new StoreIterator(true, ITERATION_PAGE);
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
        int found = 0;
        try (StoreIterator it = new StoreIterator(true, cacheSize + 1)) {
            while (found <= cacheSize && it.hasNext()) {
                byte[] key = it.next();
                if (found < cacheSize) {
                    cache.add(key);
                }
                found++;
            }
        }
        allElementsInCache = found <= cacheSize;
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

    /** The set's keys in order from the seek hint, page by page, pending writes merged in. */
    private final class StoreIterator implements java.util.Iterator<byte[]>, AutoCloseable {
        private final int pageSize;
        private List<KvEntry> page = List.of();
        private int index;
        @Nullable private byte[] start;

        StoreIterator(boolean fromSeekHint, int pageSize) {
            this.start = fromSeekHint ? successor(seekHint) : prefix;
            this.pageSize = pageSize;
        }

        @Override
        public boolean hasNext() {
            while (index >= page.size()) {
                if (start == null) {
                    return false;
                }
                StateReader.MergedPage merged =
                        reader.scanPage(lease, start, prefixEnd, pageSize, true);
                page = merged.entries();
                index = 0;
                start = merged.next();
            }
            return true;
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
            start = null;
        }
    }
}
