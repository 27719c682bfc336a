package io.taishan.backend.read;

import io.taishan.bloom.BloomFilter;
import io.taishan.bloom.KeyHash;
import java.util.ArrayList;
import java.util.List;

/**
 * The prefixes ({@code [state id][key group][key][namespace]}) of the maps of one shard that got an
 * entry, as a Bloom filter that grows: a "no" means no map under the prefix has ever had an entry,
 * so iterating it needs no {@code Scan}. Streaming joins and ranks without a unique key look at the
 * other side's map for every record, and most of those maps were never written (in Nexmark's q7
 * about half of all events scanned one), so that "no" is what saves their round trip. The shard's
 * key filter cannot answer it: it holds whole entry keys, and the kv-server that rebuilds it does
 * not know where in a key a map's prefix ends.
 *
 * <p>Complete only for what its owner inserted: the owner keeps one only for a shard that started
 * empty in its backend and tells it every map entry put there (the write queue's pending writes
 * included, since they are told before they are enqueued). Deletes, clears and expiry are not told:
 * a map that had entries stays a "maybe" and is scanned, as it would be without the filter.
 *
 * <p>Growth (a scalable Bloom filter, Almeida et al. 2007): the number of maps is not known up
 * front, so it starts small and, when its newest filter holds its capacity of prefixes, adds one of
 * twice the capacity at half the false-positive rate. The rates sum to at most twice the first
 * one's, however many filters it grows to. A prefix already answered "maybe" is not inserted again,
 * so a map's later puts cost a lookup only.
 *
 * <p>Cost: a put of a map entry hashes its prefix (XXH3, a few ns) and reads one cache line per
 * filter (a few filters: capacity doubles each time); a lookup the same. Memory: none until the
 * first map entry, then 1.25 bytes per prefix at 1%, off-heap, freed by {@link #close()}. Task
 * thread only.
 */
final class MapPrefixFilter implements AutoCloseable {
    static final double FIRST_FPP = 0.01;

    /**
     * Filter {@code i} holds {@code firstCapacity << i} prefixes at {@code FIRST_FPP / 2^i}. Empty
     * until the first insert: a shard without maps costs no filter memory.
     */
    private final List<BloomFilter> filters = new ArrayList<>(4);

    private final long firstCapacity;

    /** Prefixes put into the newest filter. */
    private long inNewest;

    private boolean closed;

    /**
     * @param firstCapacity the prefixes the first filter holds at {@link #FIRST_FPP}
     */
    MapPrefixFilter(long firstCapacity) {
        this.firstCapacity = firstCapacity;
    }

    /**
     * A map entry under {@code key[0, prefixLength)} is about to be written.
     *
     * @return true if the map surely had no entry before (this is its first), false if it may have
     */
    boolean inserted(byte[] key, int prefixLength) {
        if (closed) {
            return false;
        }
        long hash = KeyHash.hash(key, 0, prefixLength);
        if (mightContain(hash)) {
            return false;
        }
        int count = filters.size();
        if (count == 0 || inNewest >= firstCapacity << (count - 1)) {
            filters.add(BloomFilter.create(firstCapacity << count, FIRST_FPP / (1L << count)));
            inNewest = 0;
        }
        filters.get(filters.size() - 1).put(hash);
        inNewest++;
        return true;
    }

    /** False only if no map entry under {@code prefix} was ever inserted. */
    boolean mightContain(byte[] prefix) {
        return mightContain(KeyHash.hash(prefix));
    }

    private boolean mightContain(long hash) {
        if (closed) {
            return true;
        }
        for (int i = filters.size() - 1; i >= 0; i--) {
            if (filters.get(i).mightContain(hash)) {
                return true;
            }
        }
        return false;
    }

    long offHeapBytes() {
        long sum = 0;
        for (BloomFilter f : filters) {
            sum += f.sizeBytes();
        }
        return sum;
    }

    int filterCount() {
        return filters.size();
    }

    @Override
    public void close() {
        closed = true;
        filters.forEach(BloomFilter::close);
        filters.clear();
    }
}
