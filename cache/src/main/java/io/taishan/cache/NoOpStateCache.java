package io.taishan.cache;

import java.util.Objects;

/**
 * {@link CacheType#NONE}: keeps nothing, every {@link #get} misses. Lets a backend without a cache
 * budget run the same read path with no null checks. Counts its gets as misses and its puts, so the
 * metrics show the traffic a cache would have seen.
 */
public final class NoOpStateCache extends SharedStateCache {

    NoOpStateCache() {}

    @Override
    public byte[] get(long space, byte[] key) {
        Objects.requireNonNull(key, "key");
        misses.increment();
        return null;
    }

    @Override
    public void put(long space, byte[] key, byte[] value, long expireAtMillis) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        puts.increment();
    }

    @Override
    public void putAbsent(long space, byte[] key, long expireAtMillis) {
        Objects.requireNonNull(key, "key");
        puts.increment();
    }

    @Override
    public void invalidate(long space, byte[] key) {
        Objects.requireNonNull(key, "key");
    }

    @Override
    public CacheType type() {
        return CacheType.NONE;
    }

    @Override
    public CacheStats stats() {
        return new CacheStats(0, 0, misses.sum(), puts.sum(), 0, 0, 0, 0, 0);
    }

    @Override
    void setCapacity(long bytes) {}

    @Override
    void close() {}

    @Override
    public String toString() {
        return "NoOpStateCache";
    }
}
