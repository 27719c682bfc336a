package io.taishan.kv.server.storage;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * How the storage engine lays out and tunes its RocksDB instances.
 *
 * @param dataDir root of all tables, stores and snapshots
 * @param walMode whether writes go to RocksDB's WAL and whether it is fsynced; off by default,
 *     because recovery always goes back to a durable snapshot (see {@link WalMode} for what each
 *     mode keeps on a crash)
 * @param blockCacheBytes the one LRU block cache shared by every open store
 * @param writeBufferBytes total memtable memory of every open store (one WriteBufferManager,
 *     charged to the block cache)
 * @param storeWriteBufferBytes the memtable size of one store
 * @param backgroundThreads flush and compaction threads shared by every store
 * @param maxOpenFilesPerStore RocksDB {@code max_open_files} of one store (-1: unlimited)
 * @param storeIdleClose an open store unused this long is flushed and closed
 * @param maxOpenStores above this many open stores, the least recently used are closed
 * @param filters how the shards' Bloom filters are sized, bounded and rebuilt
 * @param snapshotCache how long local copies of snapshots in checkpoint storage stay
 */
public record StorageOptions(
        Path dataDir,
        WalMode walMode,
        long blockCacheBytes,
        long writeBufferBytes,
        long storeWriteBufferBytes,
        int backgroundThreads,
        int maxOpenFilesPerStore,
        Duration storeIdleClose,
        int maxOpenStores,
        FilterOptions filters,
        SnapshotCacheOptions snapshotCache) {

    public StorageOptions {
        Objects.requireNonNull(dataDir, "dataDir");
        Objects.requireNonNull(filters, "filters");
        Objects.requireNonNull(snapshotCache, "snapshotCache");
        Objects.requireNonNull(walMode, "walMode");
        Objects.requireNonNull(storeIdleClose, "storeIdleClose");
        if (blockCacheBytes <= 0 || writeBufferBytes <= 0 || storeWriteBufferBytes <= 0) {
            throw new IllegalArgumentException("cache and write buffer sizes must be > 0");
        }
        if (backgroundThreads < 1) {
            throw new IllegalArgumentException("background threads must be >= 1");
        }
        if (maxOpenStores < 1) {
            throw new IllegalArgumentException("max open shards must be >= 1");
        }
        if (maxOpenFilesPerStore == 0 || maxOpenFilesPerStore < -1) {
            throw new IllegalArgumentException("max open files per shard must be -1 or > 0");
        }
    }

    /** Defaults for a data directory; see the kv-server README for what they mean. */
    public static StorageOptions defaults(Path dataDir) {
        return new StorageOptions(
                dataDir,
                WalMode.OFF,
                256L << 20,
                128L << 20,
                32L << 20,
                2,
                64,
                Duration.ofMinutes(5),
                1024,
                FilterOptions.DEFAULTS,
                SnapshotCacheOptions.DEFAULTS);
    }

    public boolean walEnabled() {
        return walMode.writesLog();
    }

    public StorageOptions withDataDir(Path dir) {
        return new StorageOptions(
                dir,
                walMode,
                blockCacheBytes,
                writeBufferBytes,
                storeWriteBufferBytes,
                backgroundThreads,
                maxOpenFilesPerStore,
                storeIdleClose,
                maxOpenStores,
                filters,
                snapshotCache);
    }

    public StorageOptions withFilters(FilterOptions newFilters) {
        return new StorageOptions(
                dataDir,
                walMode,
                blockCacheBytes,
                writeBufferBytes,
                storeWriteBufferBytes,
                backgroundThreads,
                maxOpenFilesPerStore,
                storeIdleClose,
                maxOpenStores,
                newFilters,
                snapshotCache);
    }

    public StorageOptions withSnapshotCache(SnapshotCacheOptions cache) {
        return new StorageOptions(
                dataDir,
                walMode,
                blockCacheBytes,
                writeBufferBytes,
                storeWriteBufferBytes,
                backgroundThreads,
                maxOpenFilesPerStore,
                storeIdleClose,
                maxOpenStores,
                filters,
                cache);
    }
}
