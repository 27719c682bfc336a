package io.taishan.backend.read;

import io.taishan.bloom.FilterGeometry;
import io.taishan.bloom.FilterSizing;
import io.taishan.bloom.KeyHash;
import io.taishan.bloom.LoadingFilter;
import java.util.function.IntConsumer;
import java.util.function.IntPredicate;

/**
 * The Bloom filter copy of each owned shard ({@link LoadingFilter}): a "no" means the shard has
 * surely no value for the key, so the read returns absent without a round trip.
 *
 * <p>Each filter is created with the backend, before the backend writes anything, so every write of
 * this subtask is in it. A shard that starts empty (a new table, or a shard the restore opened and
 * wiped) is complete from the start: its filter is loaded empty at once. A shard rolled back or
 * cloned from a snapshot holds keys the client never saw: its filter answers "maybe" until a copy
 * of the server's is loaded.
 *
 * <p>A shard that starts empty also keeps the prefixes of its maps that got an entry ({@link
 * MapPrefixFilter}), so iterating a map that never had one needs no scan.
 *
 * <p>Cost: one 64-bit hash of the key (XXH3, a few ns) and one cache line of the filter per write
 * and per read that reaches it; a map put hashes its prefix too.
 */
public final class ShardFilters implements AutoCloseable {
    /**
     * What the empty shards of one operator's first filters are sized for together, before the
     * server's copies replace them: 16,384 keys per shard at 128 key groups (20 KiB each), as many
     * fewer per shard as there are more key groups, so an operator's filter memory does not grow
     * with its max parallelism (at 32,768 key groups 16,384 per shard would be 655 MiB per subtask
     * of parallelism 1).
     */
    static final long FRESH_KEYS_PER_OPERATOR = 16_384L * 128;

    /**
     * What the first map prefix filters of one operator's shards hold together (1,024 maps per
     * shard at 128 key groups, 1.3 KiB each), fewer per shard with more key groups, as above. They
     * grow as maps come.
     */
    static final long FIRST_MAP_PREFIXES_PER_OPERATOR = 1024L * 128;

    /** The floor of a fresh shard's filter: what the kv-server sizes a new shard's for. */
    static final long MIN_FRESH_SHARD_KEYS = 64;

    private final int firstShard;
    private final LoadingFilter[] filters;

    /**
     * Per shard, the prefixes of its maps that got an entry ({@link MapPrefixFilter}); null where
     * the shard did not start empty (its maps' prefixes are unknown: every map is a "maybe") and
     * everywhere when filters are off.
     */
    private final MapPrefixFilter[] mapPrefixes;

    private final boolean enabled;
    private volatile IntConsumer falsePositiveListener = shard -> {};

    /**
     * @param shardCount the owned shards
     * @param tableShards the table's shards (the operator's max parallelism)
     * @param startsEmpty whether the shard (by id) starts with no data
     */
    public ShardFilters(
            int firstShard,
            int shardCount,
            int tableShards,
            IntPredicate startsEmpty,
            boolean enabled) {
        this.firstShard = firstShard;
        this.filters = new LoadingFilter[shardCount];
        this.mapPrefixes = new MapPrefixFilter[shardCount];
        this.enabled = enabled;
        if (!enabled) {
            return;
        }
        FilterGeometry fresh =
                FilterSizing.DEFAULT.geometryFor(freshShardKeys(Math.max(1, tableShards)));
        long firstMapPrefixes =
                Math.max(
                        MIN_FRESH_SHARD_KEYS,
                        FIRST_MAP_PREFIXES_PER_OPERATOR / Math.max(1, tableShards));
        for (int i = 0; i < shardCount; i++) {
            boolean empty = startsEmpty.test(firstShard + i);
            filters[i] = empty ? LoadingFilter.empty(fresh, 0) : new LoadingFilter();
            mapPrefixes[i] = empty ? new MapPrefixFilter(firstMapPrefixes) : null;
        }
    }

    /** What a fresh shard's filter is sized for in a table of {@code tableShards}. */
    static long freshShardKeys(int tableShards) {
        return Math.max(MIN_FRESH_SHARD_KEYS, FRESH_KEYS_PER_OPERATOR / tableShards);
    }

    /** A write of {@code key} to the shard is about to be enqueued. */
    void inserted(int shard, byte[] key) {
        if (enabled) {
            filters[shard - firstShard].insert(KeyHash.hash(key));
        }
    }

    /**
     * A put of a map entry under {@code key[0, prefixLength)} is about to be enqueued.
     *
     * @return true if the map surely had no entry before
     */
    boolean mapEntryInserted(int shard, byte[] key, int prefixLength) {
        MapPrefixFilter prefixes = mapPrefixes[shard - firstShard];
        return prefixes != null && prefixes.inserted(key, prefixLength);
    }

    /** False only if no map under {@code prefix} in the shard has an entry. */
    boolean mapMightHaveEntries(int shard, byte[] prefix) {
        MapPrefixFilter prefixes = mapPrefixes[shard - firstShard];
        return prefixes == null || prefixes.mightContain(prefix);
    }

    /**
     * Entries are about to be written whose map prefixes the writer does not tell (a canonical
     * savepoint's restore writes raw keys): from now on every map is a "maybe".
     */
    public void forgetMapPrefixes() {
        for (int i = 0; i < mapPrefixes.length; i++) {
            if (mapPrefixes[i] != null) {
                mapPrefixes[i].close();
                mapPrefixes[i] = null;
            }
        }
    }

    /** False only if the shard surely has no value for {@code key}. */
    boolean mightContain(int shard, byte[] key) {
        return !enabled || filters[shard - firstShard].mightContain(KeyHash.hash(key));
    }

    /** A "maybe" that the server answered with absent. */
    void falsePositive(int shard) {
        if (enabled) {
            filters[shard - firstShard].reportFalsePositive();
            falsePositiveListener.accept(shard);
        }
    }

    /** Who hears of each false positive (the loader, to fetch a fresher copy). */
    public void onFalsePositive(IntConsumer listener) {
        this.falsePositiveListener = listener;
    }

    public boolean enabled() {
        return enabled;
    }

    /** The filter of a shard, for loading a fetched copy and for metrics. */
    public LoadingFilter filter(int shard) {
        return filters[shard - firstShard];
    }

    public long absentAnswers() {
        long sum = 0;
        for (LoadingFilter f : filters) {
            sum += f == null ? 0 : f.absentAnswers();
        }
        return sum;
    }

    public long falsePositives() {
        long sum = 0;
        for (LoadingFilter f : filters) {
            sum += f == null ? 0 : f.falsePositives();
        }
        return sum;
    }

    public int loadedShards() {
        int loaded = 0;
        for (LoadingFilter f : filters) {
            loaded += f != null && f.isLoaded() ? 1 : 0;
        }
        return loaded;
    }

    /** The loaded version of each shard's filter, for logs and tests. */
    public java.util.List<Long> versions() {
        java.util.List<Long> versions = new java.util.ArrayList<>();
        for (LoadingFilter f : filters) {
            versions.add(f == null ? LoadingFilter.NO_VERSION : f.version());
        }
        return versions;
    }

    public long offHeapBytes() {
        long sum = 0;
        for (LoadingFilter f : filters) {
            sum += f == null ? 0 : f.offHeapBytes();
        }
        for (MapPrefixFilter f : mapPrefixes) {
            sum += f == null ? 0 : f.offHeapBytes();
        }
        return sum;
    }

    @Override
    public void close() {
        for (LoadingFilter f : filters) {
            if (f != null) {
                f.close();
            }
        }
        forgetMapPrefixes();
    }
}
