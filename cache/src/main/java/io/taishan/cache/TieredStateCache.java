package io.taishan.cache;

import java.util.Optional;

/**
 * The in-memory cache over a {@link LocalDiskCache}: off-heap (or on-heap) memory first, then the
 * local disk, then the caller's store.
 *
 * <p>Both tiers are written through: every put, known-absent mark and invalidation goes to both, so
 * each holds either the key's current entry or nothing, and a read may take whichever answers
 * first. A read that misses memory and finds the key on disk puts it back into memory with the
 * expiry it was written with. The disk tier is larger and evicts later, so memory misses that would
 * each cost a round trip cost a local lookup instead.
 *
 * <p>{@link #stats()} are the memory tier's (as without a disk tier); {@link #localStats()} the
 * disk tier's.
 */
final class TieredStateCache extends SharedStateCache {
    private final SharedStateCache memory;
    private final LocalDiskCache disk;

    TieredStateCache(SharedStateCache memory, LocalDiskCache disk) {
        this.memory = memory;
        this.disk = disk;
    }

    @Override
    public byte[] get(long space, byte[] key) {
        byte[] value = memory.get(space, key);
        if (value != null) {
            return value;
        }
        LocalDiskCache.Hit hit = disk.get(space, key);
        if (hit == null) {
            return null;
        }
        memory.put(space, key, hit.value(), hit.expireAtMillis());
        return hit.value();
    }

    /**
     * Memory only: a disk read per append would cost more than the round trip it might save later
     * (measured: list appends at 0.25× RocksDB with it); the disk's entry, if any, is dropped.
     */
    @Override
    public byte[] getForUpdate(long space, byte[] key) {
        byte[] value = memory.get(space, key);
        if (value == null) {
            disk.invalidate(space, key);
        }
        return value;
    }

    @Override
    public void put(long space, byte[] key, byte[] value, long expireAtMillis) {
        memory.put(space, key, value, expireAtMillis);
        disk.put(space, key, value, expireAtMillis);
    }

    @Override
    public void putAbsent(long space, byte[] key, long expireAtMillis) {
        memory.putAbsent(space, key, expireAtMillis);
        disk.put(space, key, StateCache.ABSENT, expireAtMillis);
    }

    @Override
    public void invalidate(long space, byte[] key) {
        memory.invalidate(space, key);
        disk.invalidate(space, key);
    }

    @Override
    public CacheType type() {
        return memory.type();
    }

    @Override
    public CacheStats stats() {
        return memory.stats();
    }

    @Override
    public Optional<CacheStats> localStats() {
        return Optional.of(disk.stats());
    }

    @Override
    void setCapacity(long bytes) {
        memory.setCapacity(bytes);
    }

    LocalDiskCache disk() {
        return disk;
    }

    @Override
    void close() {
        try {
            memory.close();
        } finally {
            disk.close();
        }
    }
}
