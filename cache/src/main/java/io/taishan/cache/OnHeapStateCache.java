package io.taishan.cache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.Policy;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.time.InstantSource;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@link CacheType#ON_HEAP}: the entries live on the Java heap in Caffeine. For small caches: every
 * entry is a handful of heap objects the GC traces, so beyond a few hundred megabytes {@link
 * OffHeapStateCache} is the better choice.
 *
 * <h2>Design</h2>
 *
 * <ul>
 *   <li>Eviction: Caffeine's W-TinyLFU by weight ({@code maximumWeight} = capacity, adaptive
 *       window), the same policy family as the off-heap cache.
 *   <li>Expiry: Caffeine's per-entry {@link Expiry} on a ticker derived from the cache's {@link
 *       InstantSource} (epoch millis × 10⁶), so Caffeine's deadline is exactly {@code
 *       expireAtMillis}; a read also checks it against that clock itself, so a wall clock stepping
 *       backwards cannot make an entry outlive its deadline.
 *   <li>Maintenance runs on the writing thread ({@code executor(Runnable::run)}): no dependency on
 *       the common pool, and the weight is back under the maximum when a single writer's put
 *       returns.
 *   <li>Both arrays are copied on put and the value again on each hit, as the off-heap cache must:
 *       one contract for both types, and no caller can corrupt an entry through an array it kept.
 * </ul>
 *
 * <h2>Cost model</h2>
 *
 * <ul>
 *   <li>{@code get}: a {@code ConcurrentHashMap} lookup with a per-thread reusable lookup key (no
 *       key allocation), Caffeine's read buffer; a hit allocates the returned copy only, a miss or
 *       an absent hit nothing.
 *   <li>Bytes counted by the weigher: {@value #ENTRY_OVERHEAD} bytes per entry (the key and value
 *       holders, Caffeine's node, the map's node and table slot: measured on a 64-bit JVM with
 *       compressed references, see the module README) plus each array as the heap lays it out,
 *       {@code roundUp8(16 + length)}.
 * </ul>
 */
public final class OnHeapStateCache extends SharedStateCache {

    /** Heap bytes per entry besides the two arrays; measured, see the class Javadoc. */
    static final int ENTRY_OVERHEAD = 160;

    private static final ThreadLocal<HeapKey> LOOKUP = ThreadLocal.withInitial(HeapKey::new);

    private final Cache<HeapKey, HeapValue> cache;
    private final Policy.Eviction<HeapKey, HeapValue> eviction;
    private final InstantSource clock;
    private final LongAdder evictions = new LongAdder();

    OnHeapStateCache(long capacity, InstantSource clock) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be positive: " + capacity);
        }
        this.clock = Objects.requireNonNull(clock, "clock");
        this.cache =
                Caffeine.newBuilder()
                        .maximumWeight(capacity)
                        .weigher((HeapKey k, HeapValue v) -> weigh(k.key.length, v.length()))
                        .expireAfter(new DeadlineExpiry())
                        .ticker(() -> clock.millis() * 1_000_000L)
                        .executor(Runnable::run)
                        .evictionListener(
                                (HeapKey k, HeapValue v, RemovalCause cause) -> {
                                    if (cause == RemovalCause.EXPIRED) {
                                        expirations.increment();
                                    } else {
                                        evictions.increment();
                                    }
                                })
                        .build();
        this.eviction = cache.policy().eviction().orElseThrow();
    }

    /** The weight of an entry with these array lengths (-1: no value array). */
    static int weigh(int keyLength, int valueLength) {
        long w =
                ENTRY_OVERHEAD
                        + arrayBytes(keyLength)
                        + (valueLength < 0 ? 0 : arrayBytes(valueLength));
        return (int) Math.min(Integer.MAX_VALUE, w);
    }

    private static long arrayBytes(int length) {
        return (16L + length + 7) & ~7L;
    }

    @Override
    public byte[] get(long space, byte[] key) {
        HeapKey lookup = LOOKUP.get().set(space, key);
        HeapValue v;
        try {
            v = cache.getIfPresent(lookup);
        } finally {
            lookup.key = null;
        }
        if (v == null || (v.expireAt != NEVER && v.expireAt <= clock.millis())) {
            misses.increment();
            return null;
        }
        if (v.value == null) {
            absentHits.increment();
            return ABSENT;
        }
        hits.increment();
        return v.value.clone();
    }

    @Override
    public void put(long space, byte[] key, byte[] value, long expireAtMillis) {
        Objects.requireNonNull(value, "value");
        store(space, key, value == ABSENT ? null : value.clone(), expireAtMillis);
    }

    @Override
    public void putAbsent(long space, byte[] key, long expireAtMillis) {
        store(space, key, null, expireAtMillis);
    }

    private void store(long space, byte[] key, byte[] valueCopy, long expireAtMillis) {
        Objects.requireNonNull(key, "key");
        puts.increment();
        if (expireAtMillis != NEVER && expireAtMillis <= clock.millis()) {
            invalidate(space, key);
            return;
        }
        cache.put(new HeapKey(space, key.clone()), new HeapValue(valueCopy, expireAtMillis));
    }

    @Override
    public void invalidate(long space, byte[] key) {
        cache.invalidate(new HeapKey(space, Objects.requireNonNull(key, "key")));
    }

    @Override
    public CacheType type() {
        return CacheType.ON_HEAP;
    }

    @Override
    public CacheStats stats() {
        return new CacheStats(
                hits.sum(),
                absentHits.sum(),
                misses.sum(),
                puts.sum(),
                evictions.sum(),
                expirations.sum(),
                eviction.weightedSize().orElse(0L),
                eviction.getMaximum(),
                cache.estimatedSize());
    }

    /** Runs Caffeine's pending maintenance now (tests: make the weight exact). */
    void cleanUp() {
        cache.cleanUp();
    }

    @Override
    void setCapacity(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("capacity must be positive: " + bytes);
        }
        eviction.setMaximum(bytes);
    }

    @Override
    void close() {
        cache.invalidateAll();
        cache.cleanUp();
    }

    @Override
    public String toString() {
        return "OnHeapStateCache" + stats();
    }

    /**
     * A cache key. Stored instances are never changed; the per-thread lookup instance is changed
     * only by its own thread and never stored (Caffeine's getIfPresent keeps no reference to the
     * key it is given).
     */
    static final class HeapKey {
        long space;
        byte[] key;
        int hash;

        HeapKey() {}

        HeapKey(long space, byte[] key) {
            set(space, key);
        }

        HeapKey set(long space, byte[] key) {
            this.space = space;
            this.key = Objects.requireNonNull(key, "key");
            this.hash = 31 * Arrays.hashCode(key) + Long.hashCode(space * 0x9E3779B97F4A7C15L);
            return this;
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof HeapKey k
                    && space == k.space
                    && hash == k.hash
                    && Arrays.equals(key, k.key);
        }
    }

    /** A value or, with {@code value == null}, known absent. */
    private record HeapValue(byte[] value, long expireAt) {
        int length() {
            return value == null ? -1 : value.length;
        }
    }

    /** Expires each entry at its own {@code expireAtMillis}, on the millis-based ticker. */
    private static final class DeadlineExpiry implements Expiry<HeapKey, HeapValue> {
        @Override
        public long expireAfterCreate(HeapKey key, HeapValue value, long now) {
            if (value.expireAt == NEVER || value.expireAt > Long.MAX_VALUE / 1_000_000L) {
                return Long.MAX_VALUE;
            }
            return Math.max(0L, value.expireAt * 1_000_000L - now);
        }

        @Override
        public long expireAfterUpdate(
                HeapKey key, HeapValue value, long now, long currentDuration) {
            return expireAfterCreate(key, value, now);
        }

        @Override
        public long expireAfterRead(HeapKey key, HeapValue value, long now, long currentDuration) {
            return currentDuration;
        }
    }
}
