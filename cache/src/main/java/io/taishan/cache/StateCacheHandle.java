package io.taishan.cache;

import java.util.Optional;

/**
 * One backend's share of a {@link StateCacheRegistry}'s cache: the cache itself for reads and
 * writes, and, until {@link #close}d, a contribution to its capacity.
 *
 * <p>Close is idempotent and thread-safe: the first close removes the contribution (and frees the
 * shared cache if this was its last handle), later ones do nothing. Using a closed handle throws
 * {@link IllegalStateException}; a call racing with the close that frees the cache may fail, but
 * never reads freed memory (OHC unlinks entries under its segment locks and frees an entry only
 * when its last reader lets go).
 */
public final class StateCacheHandle implements StateCache, AutoCloseable {

    private final StateCacheRegistry registry;
    private final SharedStateCache cache;
    private final long contributedBytes;
    private volatile boolean closed;

    StateCacheHandle(StateCacheRegistry registry, SharedStateCache cache, long contributedBytes) {
        this.registry = registry;
        this.cache = cache;
        this.contributedBytes = contributedBytes;
    }

    SharedStateCache cache() {
        return cache;
    }

    /**
     * The bytes this handle added to the shared cache's capacity (0 for {@link CacheType#NONE}).
     */
    public long contributedBytes() {
        return contributedBytes;
    }

    private SharedStateCache open() {
        if (closed) {
            throw new IllegalStateException("state cache handle is closed");
        }
        return cache;
    }

    @Override
    public long newSpace() {
        return open().newSpace();
    }

    @Override
    public byte[] get(long space, byte[] key) {
        return open().get(space, key);
    }

    @Override
    public byte[] getForUpdate(long space, byte[] key) {
        return open().getForUpdate(space, key);
    }

    @Override
    public void put(long space, byte[] key, byte[] value, long expireAtMillis) {
        open().put(space, key, value, expireAtMillis);
    }

    @Override
    public void putAbsent(long space, byte[] key, long expireAtMillis) {
        open().putAbsent(space, key, expireAtMillis);
    }

    @Override
    public void invalidate(long space, byte[] key) {
        open().invalidate(space, key);
    }

    @Override
    public CacheType type() {
        return cache.type();
    }

    /**
     * The shared cache's stats (all handles together). After close, the last snapshot is not kept:
     * this returns empty stats, so a metric gauge outliving the backend reads zeros, not freed
     * state.
     */
    @Override
    public CacheStats stats() {
        return closed ? CacheStats.EMPTY : cache.stats();
    }

    /** The disk tier's stats, as {@link #stats()}: empty after close. */
    @Override
    public Optional<CacheStats> localStats() {
        return closed ? Optional.empty() : cache.localStats();
    }

    /** Whether {@link #close} was called. */
    public boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        registry.release(this);
    }

    @Override
    public String toString() {
        return "StateCacheHandle{"
                + cache.type()
                + ", "
                + contributedBytes
                + " bytes, closed="
                + closed
                + "}";
    }
}
