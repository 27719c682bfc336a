package io.taishan.cache;

/**
 * A snapshot of a {@link StateCache}'s counters (since it was created) and sizes.
 *
 * @param hits gets that returned a value
 * @param absentHits gets that returned {@link StateCache#ABSENT}
 * @param misses gets that returned {@code null}, expired entries included
 * @param puts puts and putAbsents, including those the cache could not keep
 * @param evictions entries dropped to make room
 * @param expirations entries found expired and dropped (an expired entry nobody reads again is
 *     dropped by eviction instead and counted there)
 * @param bytesUsed bytes the entries take, as the implementation counts them (see its Javadoc)
 * @param capacity the byte budget
 * @param entries entries held, expired ones not yet dropped included
 */
public record CacheStats(
        long hits,
        long absentHits,
        long misses,
        long puts,
        long evictions,
        long expirations,
        long bytesUsed,
        long capacity,
        long entries) {

    /** The stats of a cache that holds nothing. */
    static final CacheStats EMPTY = new CacheStats(0, 0, 0, 0, 0, 0, 0, 0, 0);

    /** Gets that returned a value or {@link StateCache#ABSENT}, over all gets; 0 with no gets. */
    public double hitRate() {
        long requests = hits + absentHits + misses;
        return requests == 0 ? 0.0 : (double) (hits + absentHits) / requests;
    }
}
