package io.taishan.cache;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the {@link StateCacheRegistry} needs of a cache it shares: a capacity it can change while
 * the cache is in use, and a close that frees the memory. Also the state every implementation has:
 * the space counter and the counters behind {@link CacheStats}.
 */
abstract class SharedStateCache implements StateCache {
    // LongAdder: each get bumps one counter, from many task threads at once; a shared AtomicLong
    // would be the one contended cache line on the hit path.
    final LongAdder hits = new LongAdder();
    final LongAdder absentHits = new LongAdder();
    final LongAdder misses = new LongAdder();
    final LongAdder puts = new LongAdder();
    final LongAdder expirations = new LongAdder();

    private final AtomicLong spaces = new AtomicLong();

    @Override
    public final long newSpace() {
        return spaces.incrementAndGet();
    }

    /** Sets the byte budget. Called by the registry only, never concurrently with itself. */
    abstract void setCapacity(long bytes);

    /** Frees everything. Called by the registry only, once, when no handle is left. */
    abstract void close();
}
