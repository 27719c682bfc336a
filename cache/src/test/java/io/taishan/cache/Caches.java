package io.taishan.cache;

import java.time.InstantSource;

/** Builds the implementations under test, small and on a given clock. */
final class Caches {
    /** OHC segments in tests: few, so each holds many entries and eviction runs in all of them. */
    static final int SEGMENTS = 2;

    private Caches() {}

    static SharedStateCache create(CacheType type, long capacity, InstantSource clock) {
        switch (type) {
            case OFF_HEAP:
                return new OffHeapStateCache(capacity, SEGMENTS, clock);
            case ON_HEAP:
                return new OnHeapStateCache(capacity, clock);
            case NONE:
                return new NoOpStateCache();
            default:
                throw new AssertionError(type);
        }
    }
}
