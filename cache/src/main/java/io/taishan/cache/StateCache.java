package io.taishan.cache;

import java.util.Optional;

/**
 * A read cache of serialized keyed state: bytes in, bytes out, shared by every state of every
 * backend in a TaskManager.
 *
 * <p>A key is {@code (space, key)}. A space is an id taken from {@link #newSpace()} for each
 * incarnation of something the caller reads (a (table, shard) lease, or a generation of one); it is
 * never handed out twice by one cache, so taking a fresh space makes every entry of the old one
 * unreachable at once. The cache has no range invalidation: unreachable entries are never read
 * again and age out by eviction.
 *
 * <p>Values are either bytes or <em>known absent</em> ({@link #ABSENT}, compared by identity): a
 * cached "the store has no value here", so a read of deleted or never-written state costs no round
 * trip either.
 *
 * <p>What the cache guarantees: {@link #get} returns only what was last put for exactly that {@code
 * (space, key)} (full key comparison, never a hash match alone), never an entry at or after its
 * {@code expireAtMillis}, and nothing for a key after {@link #invalidate}; an entry may vanish at
 * any time (eviction). What the caller guarantees: consistency with the store. It writes through
 * (every write that changes a key's value in the store is also a {@code put}, {@code putAbsent} or
 * {@code invalidate} here, in the same order as its writes to that key), and never keeps data only
 * in the cache.
 *
 * <p>Every method is thread-safe and takes no global lock.
 */
public interface StateCache {

    /**
     * The value {@link #get} returns for a key cached as known absent. An empty array, so nothing
     * can be written into it; compare with {@code ==}: an empty value put with {@link #put} comes
     * back as a different, fresh empty array.
     */
    byte[] ABSENT = new byte[0];

    /** An {@code expireAtMillis} for an entry that does not expire. */
    long NEVER = Long.MAX_VALUE;

    /** A space id that this cache has never handed out before and never will again. */
    long newSpace();

    /**
     * The cached value: a fresh array that belongs to the caller, {@link #ABSENT} (identity) for a
     * key cached as known absent, or {@code null} if the cache does not know.
     */
    byte[] get(long space, byte[] key);

    /**
     * Caches {@code value} for the key until {@code expireAtMillis} (wall-clock epoch millis,
     * exclusive, or {@link #NEVER}). The cache copies both arrays; the caller may reuse them. If
     * the entry cannot be kept (too large, already expired), any older entry for the key is
     * dropped, so the old value is never returned afterwards. Passing {@link #ABSENT} as the value
     * is {@link #putAbsent}.
     */
    void put(long space, byte[] key, byte[] value, long expireAtMillis);

    /** Caches the key as known absent until {@code expireAtMillis}; see {@link #put}. */
    void putAbsent(long space, byte[] key, long expireAtMillis);

    /**
     * For a read-modify-write of an entry (extending a cached list by an append): the value if the
     * cache has it at hand, else null, and then no tier keeps an entry for the key any longer. A
     * cache with one tier answers as {@link #get}; a tiered one ({@link TieredStateCache}) answers
     * from memory and drops the disk tier's entry instead of reading it.
     */
    default byte[] getForUpdate(long space, byte[] key) {
        return get(space, key);
    }

    /** Drops the key's entry, if any. */
    void invalidate(long space, byte[] key);

    /** Which implementation this is. */
    CacheType type();

    /**
     * A snapshot of the counters and sizes: no lock, no allocation but the snapshot; cheap enough
     * to be read by each of a handful of metric gauges every reporting interval.
     */
    CacheStats stats();

    /**
     * The stats of the local disk tier behind this cache ({@link LocalDiskCache}), if it has one;
     * {@link #stats()} are then the in-memory tier's.
     */
    default Optional<CacheStats> localStats() {
        return Optional.empty();
    }
}
