package io.taishan.backend.read;

import io.taishan.cache.StateCache;
import io.taishan.kv.client.KvEntry;
import java.util.Arrays;
import java.util.List;
import javax.annotation.Nullable;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;

/**
 * One keyed backend's view of the TaskManager-wide {@link StateCache}: which cache key each of its
 * store keys has, and how each write changes what is cached.
 *
 * <p><b>What an entry means.</b> A cached entry is the key's <em>current</em> value, every write
 * the subtask has made included, acknowledged by the server or not: the write path updates the
 * cache as it enqueues each write (put: the value; delete: known absent; append: the extended
 * value, or nothing), so a read may ask the cache before anything else, and a hit needs neither the
 * write queue's lock nor the network. Unflushed writes always live in the write queue too, so
 * evicting an entry never loses anything: a miss falls through to the pending writes and the
 * server, which together give the same value.
 *
 * <p><b>Spaces.</b> Each owned shard reads in a space of its own, taken when the backend starts: a
 * restore makes a new backend with new leases, so every entry of an earlier incarnation of a shard
 * is unreachable. A map's entries live in a <em>generation</em> of their own, a space whose id is
 * itself cached in the shard's space under {@code [0x80][map prefix]} (no store key starts with a
 * byte above 0x7F): {@code clear()} of the map takes a fresh generation, which makes all its
 * entries unreachable at once, whatever their number; so does the eviction of the generation entry
 * (then the map's reads miss, and are filled again, under a new generation). A range delete over a
 * whole shard takes a fresh space for the shard.
 *
 * <p><b>Listings.</b> A small map may also be cached whole, as one {@link MapListing} under the key
 * {@link MapListing#KEY} of its generation, so that iterating it, {@code isEmpty()} and gets of
 * user keys it lacks need no round trip. A listing is made from a scan that read the whole map in
 * one page, by {@code clear()} (an empty one), or at the first put of a map known to have had no
 * entry ({@link MapPrefixFilter}; an empty one the put then extends); from then on every put and
 * delete of the map rewrites it, as it writes the entry through, so it stays the map's current
 * content. Whether the map has one is a flag in the generation entry ({@code [generation, 8
 * bytes][1]}), which every map operation reads anyway: a write to a map without a listing costs
 * nothing more. A listing past its bounds, or evicted, is dropped with its flag, and the map is
 * scanned again.
 *
 * <p><b>TTL.</b> An entry of a state with TTL expires when its value would: at its last-access
 * timestamp plus the TTL, on the TTL clock, translated into wall-clock time for the cache. Flink's
 * TTL wrapper still checks every value it gets, so expiry only bounds how long the cache holds one.
 * List states with TTL are not cached: each element carries its own timestamp, and finding the
 * newest would mean deserializing the list.
 *
 * <p>Not thread-safe for writes (the task thread writes); reads from other threads (queryable
 * state) must not fill the cache, see {@link StateReader}.
 */
public final class ReadCache {
    /** Sorts above every store key: state ids have the top bit clear. */
    private static final byte GENERATION_MARKER = (byte) 0x80;

    /** A cached list is extended by an append up to this size, else dropped. */
    static final int MAX_EXTENDED_BYTES = 16 << 10;

    /**
     * Larger values are never cached: both caches copy a value on every put and hit, and one such
     * value would displace thousands of small ones. They are read from the server each time (as
     * RocksDB's backend deserializes its value on every read too).
     */
    static final int MAX_CACHED_VALUE_BYTES = 1 << 20;

    private final StateCache cache;
    private final int firstShard;
    private final long[] shardSpaces;
    private final TtlTimeProvider ttlClock;

    public ReadCache(StateCache cache, int firstShard, int shardCount, TtlTimeProvider ttlClock) {
        this.cache = cache;
        this.firstShard = firstShard;
        this.shardSpaces = new long[shardCount];
        for (int i = 0; i < shardCount; i++) {
            shardSpaces[i] = cache.newSpace();
        }
        this.ttlClock = ttlClock;
    }

    public StateCache cache() {
        return cache;
    }

    /**
     * The cached value, {@link StateCache#ABSENT} for known absent, or null when the cache does not
     * know.
     */
    @Nullable
    byte[] get(int shard, byte[] key, CachePolicy policy, int mapPrefixLength) {
        if (!policy.cached()) {
            return null;
        }
        if (!policy.mapEntries()) {
            return cache.get(shardSpace(shard), key);
        }
        long generation = generation(shard, key, mapPrefixLength);
        byte[] value = cache.get(spaceOf(generation), key);
        if (value != null || !listed(generation)) {
            return value;
        }
        byte[] listing = cache.get(spaceOf(generation), MapListing.KEY);
        if (listing == null) {
            unlist(shard, key, mapPrefixLength, generation);
            return null;
        }
        byte[] listed = MapListing.find(listing, key, mapPrefixLength);
        return listed == null ? StateCache.ABSENT : listed;
    }

    /**
     * Every entry of the map whose entries start with {@code prefix}, in key order, or null when
     * the cache has no listing of it.
     */
    @Nullable
    List<KvEntry> listing(int shard, byte[] prefix, CachePolicy policy) {
        if (!policy.cached() || !policy.mapEntries()) {
            return null;
        }
        byte[] generationEntry = cache.get(shardSpace(shard), generationKey(prefix, prefix.length));
        if (generationEntry == null || !listed(generationEntry)) {
            return null;
        }
        long generation = longOf(generationEntry) << 1 | 1;
        byte[] listing = cache.get(spaceOf(generation), MapListing.KEY);
        if (listing == null) {
            unlist(shard, prefix, prefix.length, generation);
            return null;
        }
        return MapListing.decode(listing, prefix);
    }

    /**
     * After a scan that read the whole map under {@code prefix}: {@code entries} is its content now
     * (server and pending writes merged). Listed if within {@link MapListing}'s bounds.
     */
    void fillListing(int shard, byte[] prefix, List<KvEntry> entries, CachePolicy policy) {
        if (!policy.cached() || !policy.mapEntries()) {
            return;
        }
        byte[] listing = MapListing.encode(entries, prefix.length);
        if (listing == null) {
            return;
        }
        long expireAt = listingExpireAt(policy, entries);
        if (expireAt < 0) {
            return;
        }
        long generation = generation(shard, prefix, prefix.length);
        cache.put(spaceOf(generation), MapListing.KEY, listing, expireAt);
        if (!listed(generation)) {
            cache.put(
                    shardSpace(shard),
                    generationKey(prefix, prefix.length),
                    generationEntry(spaceOf(generation), true),
                    StateCache.NEVER);
        }
    }

    /** After a read from the pending writes or the server: what {@code key} holds now. */
    void fill(
            int shard,
            byte[] key,
            @Nullable byte[] value,
            CachePolicy policy,
            int mapPrefixLength) {
        if (policy.cached()) {
            fillIn(spaceOf(shard, key, policy, mapPrefixLength), key, value, policy);
        }
    }

    private void fillIn(long space, byte[] key, @Nullable byte[] value, CachePolicy policy) {
        if (value == null) {
            cache.putAbsent(space, key, StateCache.NEVER);
            return;
        }
        long expireAt = value.length > MAX_CACHED_VALUE_BYTES ? -1 : expireAt(policy, value);
        if (expireAt < 0) {
            cache.invalidate(space, key);
        } else {
            cache.put(space, key, value, expireAt);
        }
    }

    // ---- write-through

    void put(int shard, byte[] key, byte[] value, CachePolicy policy, int mapPrefixLength) {
        write(shard, key, value, policy, mapPrefixLength);
    }

    void delete(int shard, byte[] key, CachePolicy policy, int mapPrefixLength) {
        write(shard, key, null, policy, mapPrefixLength);
    }

    /** A put ({@code value} not null) or a delete, written through; a map's listing follows. */
    private void write(
            int shard,
            byte[] key,
            @Nullable byte[] value,
            CachePolicy policy,
            int mapPrefixLength) {
        if (!policy.cached()) {
            return;
        }
        if (!policy.mapEntries()) {
            fillIn(shardSpace(shard), key, value, policy);
            return;
        }
        long generation = generation(shard, key, mapPrefixLength);
        long space = spaceOf(generation);
        fillIn(space, key, value, policy);
        if (!listed(generation)) {
            return;
        }
        byte[] listing = cache.get(space, MapListing.KEY);
        byte[] updated = null;
        long expireAt = -1;
        if (listing != null) {
            List<KvEntry> entries = MapListing.decode(listing, Arrays.copyOf(key, mapPrefixLength));
            MapListing.apply(entries, key, value);
            updated = MapListing.encode(entries, mapPrefixLength);
            if (updated != null) {
                expireAt = listingExpireAt(policy, entries);
            }
        }
        if (expireAt < 0) {
            unlist(shard, key, mapPrefixLength, generation);
        } else {
            cache.put(space, MapListing.KEY, updated, expireAt);
        }
    }

    /** The map's listing is gone or past its bounds: drop it and its flag. */
    private void unlist(int shard, byte[] key, int mapPrefixLength, long generation) {
        long space = spaceOf(generation);
        cache.invalidate(space, MapListing.KEY);
        cache.put(
                shardSpace(shard),
                generationKey(key, mapPrefixLength),
                generationEntry(space, false),
                StateCache.NEVER);
    }

    /**
     * The earliest expiry of the entries' values, NEVER without TTL, -1 if one must not be cached.
     */
    private long listingExpireAt(CachePolicy policy, List<KvEntry> entries) {
        if (!policy.hasTtl()) {
            return StateCache.NEVER;
        }
        long earliest = StateCache.NEVER;
        for (KvEntry e : entries) {
            long at = expireAt(policy, e.value());
            if (at < 0) {
                return -1;
            }
            earliest = Math.min(earliest, at);
        }
        return earliest;
    }

    /**
     * The store joins an append to the value with ','; so does a cached value, if small. A key
     * known to have had no value ({@code wasAbsent}: the shard's filter ruled it out) now holds
     * just the operand, so a list built by appends is cached from its first element on.
     */
    void append(
            int shard,
            byte[] key,
            byte[] operand,
            CachePolicy policy,
            int mapPrefixLength,
            boolean wasAbsent) {
        if (!policy.cached()) {
            return;
        }
        long space = spaceOf(shard, key, policy, mapPrefixLength);
        if (policy.mapEntries()) {
            // No map appends its entries today; a listing could not follow one.
            long generation = generation(shard, key, mapPrefixLength);
            if (listed(generation)) {
                unlist(shard, key, mapPrefixLength, generation);
            }
        }
        if (operand.length > MAX_CACHED_VALUE_BYTES) {
            cache.invalidate(space, key);
            return;
        }
        byte[] cached = cache.getForUpdate(space, key);
        if (cached == null) {
            if (wasAbsent) {
                cache.put(space, key, operand, expireAt(policy, operand));
            }
            return;
        }
        if (cached == StateCache.ABSENT) {
            cache.put(space, key, operand, expireAt(policy, operand));
        } else if (cached.length + 1 + operand.length <= MAX_EXTENDED_BYTES) {
            byte[] joined = new byte[cached.length + 1 + operand.length];
            System.arraycopy(cached, 0, joined, 0, cached.length);
            joined[cached.length] = ',';
            System.arraycopy(operand, 0, joined, cached.length + 1, operand.length);
            cache.put(space, key, joined, expireAt(policy, joined));
        } else {
            cache.invalidate(space, key);
        }
    }

    /**
     * {@code clear()} of the map whose entries all start with {@code prefix}: a fresh generation,
     * listed as empty.
     */
    void clearMap(int shard, byte[] prefix) {
        listEmpty(shard, prefix, prefix.length);
    }

    /**
     * The map under {@code key[0, mapPrefixLength)} is known to have no entry (its first put is
     * next): listed as empty, so the put makes it a listing of one entry.
     */
    void mapStartsEmpty(int shard, byte[] key, int mapPrefixLength, CachePolicy policy) {
        if (policy.cached() && policy.mapEntries()) {
            listEmpty(shard, key, mapPrefixLength);
        }
    }

    private void listEmpty(int shard, byte[] key, int mapPrefixLength) {
        long generation = cache.newSpace();
        cache.put(generation, MapListing.KEY, MapListing.EMPTY, StateCache.NEVER);
        cache.put(
                shardSpace(shard),
                generationKey(key, mapPrefixLength),
                generationEntry(generation, true),
                StateCache.NEVER);
    }

    /** A range delete the cache cannot follow key by key: the whole shard starts afresh. */
    void clearShard(int shard) {
        shardSpaces[shard - firstShard] = cache.newSpace();
    }

    // ---- keys

    private long shardSpace(int shard) {
        return shardSpaces[shard - firstShard];
    }

    private long spaceOf(int shard, byte[] key, CachePolicy policy, int mapPrefixLength) {
        if (!policy.mapEntries()) {
            return shardSpace(shard);
        }
        return spaceOf(generation(shard, key, mapPrefixLength));
    }

    /**
     * The map's generation and listing flag packed as {@code space << 1 | listed} (spaces are far
     * below 2^62), read from its generation entry, or a fresh unlisted one.
     */
    private long generation(int shard, byte[] key, int mapPrefixLength) {
        long shardSpace = shardSpace(shard);
        byte[] generationKey = generationKey(key, mapPrefixLength);
        byte[] entry = cache.get(shardSpace, generationKey);
        if (entry != null && entry.length >= Long.BYTES) {
            return longOf(entry) << 1 | (listed(entry) ? 1 : 0);
        }
        // Unknown (never cleared, or evicted): a fresh generation, under which nothing is cached.
        long fresh = cache.newSpace();
        cache.put(shardSpace, generationKey, generationEntry(fresh, false), StateCache.NEVER);
        return fresh << 1;
    }

    private static long spaceOf(long generation) {
        return generation >>> 1;
    }

    private static boolean listed(long generation) {
        return (generation & 1) != 0;
    }

    private static boolean listed(byte[] generationEntry) {
        return generationEntry.length > Long.BYTES && generationEntry[Long.BYTES] == 1;
    }

    private static byte[] generationEntry(long space, boolean listed) {
        byte[] entry = Arrays.copyOf(bytesOf(space), Long.BYTES + (listed ? 1 : 0));
        if (listed) {
            entry[Long.BYTES] = 1;
        }
        return entry;
    }

    private static byte[] generationKey(byte[] key, int prefixLength) {
        byte[] generationKey = new byte[prefixLength + 1];
        generationKey[0] = GENERATION_MARKER;
        System.arraycopy(key, 0, generationKey, 1, prefixLength);
        return generationKey;
    }

    /** Wall-clock expiry of a cached value, NEVER without TTL, or -1: do not cache it. */
    private long expireAt(CachePolicy policy, byte[] value) {
        if (!policy.hasTtl()) {
            return StateCache.NEVER;
        }
        int at = policy.timestampOffset();
        if (value.length < at + Long.BYTES || (policy.mapEntries() && value[0] != 0)) {
            return -1;
        }
        long lastAccess = longOf(value, at);
        long remaining = lastAccess + policy.ttlMillis() - ttlClock.currentTimestamp();
        if (remaining <= 0) {
            return -1;
        }
        long now = System.currentTimeMillis();
        return remaining > StateCache.NEVER - now ? StateCache.NEVER : now + remaining;
    }

    private static byte[] bytesOf(long v) {
        byte[] b = new byte[Long.BYTES];
        for (int i = 0; i < Long.BYTES; i++) {
            b[i] = (byte) (v >>> (56 - 8 * i));
        }
        return b;
    }

    private static long longOf(byte[] b) {
        return longOf(b, 0);
    }

    private static long longOf(byte[] b, int at) {
        long v = 0;
        for (int i = 0; i < Long.BYTES; i++) {
            v = (v << 8) | (b[at + i] & 0xFF);
        }
        return v;
    }
}
