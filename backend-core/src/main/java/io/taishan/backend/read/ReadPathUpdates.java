package io.taishan.backend.read;

/**
 * What the write path tells the read path's layers about each write, so that a read asking them
 * first never misses the write: the {@link ReadCache} is written through, the shard's Bloom filter
 * ({@link ShardFilters}) learns the key, and a map entry's map prefix, before the write is
 * enqueued; a value a batch fetched for the key is dropped ({@link BatchedReads}).
 */
public final class ReadPathUpdates {
    private final ReadCache cache;
    private final ShardFilters filters;
    private final BatchedReads batched;

    public ReadPathUpdates(ReadCache cache, ShardFilters filters, BatchedReads batched) {
        this.cache = cache;
        this.filters = filters;
        this.batched = batched;
    }

    /**
     * Before a put or an append of {@code key} is enqueued.
     *
     * @param mapPrefixLength for map entries, the length of the map's prefix in {@code key}
     */
    public void inserted(int shard, byte[] key, CachePolicy policy, int mapPrefixLength) {
        filters.inserted(shard, key);
        if (mapPrefixLength > 0 && filters.mapEntryInserted(shard, key, mapPrefixLength)) {
            // The map's first entry: it was empty, so the cache can list it from here on.
            cache.mapStartsEmpty(shard, key, mapPrefixLength, policy);
        }
    }

    public void put(int shard, byte[] key, byte[] value, CachePolicy policy, int mapPrefixLength) {
        batched.written(key);
        cache.put(shard, key, value, policy, mapPrefixLength);
    }

    public void delete(int shard, byte[] key, CachePolicy policy, int mapPrefixLength) {
        batched.written(key);
        cache.delete(shard, key, policy, mapPrefixLength);
    }

    /**
     * @param wasAbsent the shard's filter said, before this append, that the key has no value
     *     anywhere (not in the store, not in the pending writes, whose keys it holds too)
     */
    public void append(
            int shard,
            byte[] key,
            byte[] operand,
            CachePolicy policy,
            int mapPrefixLength,
            boolean wasAbsent) {
        batched.written(key);
        cache.append(shard, key, operand, policy, mapPrefixLength, wasAbsent);
    }

    /** Whether the shard's filter rules the key out (only worth asking for cached states). */
    public boolean surelyAbsent(int shard, byte[] key, CachePolicy policy) {
        return policy.cached() && !filters.mightContain(shard, key);
    }

    public void clearMap(int shard, byte[] prefix) {
        batched.rangeWritten();
        cache.clearMap(shard, prefix);
    }

    public void clearShard(int shard) {
        batched.rangeWritten();
        cache.clearShard(shard);
    }
}
