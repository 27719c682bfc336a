package io.taishan.backend.read;

/**
 * How one state's entries may be cached: whether at all, whether they are map entries (which a
 * {@code clear()} of their map makes unreachable as a group), and, for a state with TTL, where the
 * last-access timestamp sits in a stored value, so that a cached entry leaves the cache no later
 * than Flink's TTL lets the value live.
 *
 * @param cached whether reads and writes of the state go through the cache
 * @param mapEntries the state is a map: its keys are {@code [map prefix][user key]}
 * @param ttlMillis the state's time-to-live, or 0 for none
 * @param timestampOffset for TTL: the offset of the 8-byte big-endian last-access timestamp in a
 *     stored value (0 for value-like states, whose {@code TtlValue} comes first; 1 for map entries,
 *     behind the null flag)
 */
public record CachePolicy(boolean cached, boolean mapEntries, long ttlMillis, int timestampOffset) {

    /** Not cached: timers, and list states with TTL (see {@link ReadCache}). */
    public static final CachePolicy UNCACHED = new CachePolicy(false, false, 0, 0);

    public static final CachePolicy VALUES = new CachePolicy(true, false, 0, 0);

    public static final CachePolicy MAP_ENTRIES = new CachePolicy(true, true, 0, 0);

    public static CachePolicy valuesWithTtl(long ttlMillis) {
        return new CachePolicy(true, false, ttlMillis, 0);
    }

    public static CachePolicy mapEntriesWithTtl(long ttlMillis) {
        return new CachePolicy(true, true, ttlMillis, 1);
    }

    public boolean hasTtl() {
        return ttlMillis > 0;
    }
}
