package io.taishan.cache;

/** The implementation of a {@link StateCache}. */
public enum CacheType {
    /**
     * Entries off the Java heap in OHC (the default): no GC cost whatever the size; each hit copies
     * the value onto the heap. See {@link OffHeapStateCache}.
     */
    OFF_HEAP,
    /**
     * Entries on the Java heap in Caffeine: for small caches, where the GC cost of the entries does
     * not matter. See {@link OnHeapStateCache}.
     */
    ON_HEAP,
    /** No cache: every {@code get} misses and nothing is kept, so callers need no null checks. */
    NONE
}
