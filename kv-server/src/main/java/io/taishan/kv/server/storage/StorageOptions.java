package io.taishan.kv.server.storage;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * How the storage engine lays out and tunes its RocksDB instances.
 *
 * @param dataDir root of all tables, shards and snapshots
 * @param walMode whether writes go to RocksDB's WAL and whether it is fsynced; off by default,
 *     because recovery always goes back to a durable snapshot (see {@link WalMode} for what each
 *     mode keeps on a crash)
 * @param blockCacheBytes the one LRU block cache shared by every open shard
 * @param writeBufferBytes total memtable memory of every open shard (one WriteBufferManager,
 *     charged to the block cache)
 * @param shardWriteBufferBytes the memtable size of one shard
 * @param backgroundThreads flush and compaction threads shared by every shard
 * @param maxOpenFilesPerShard RocksDB {@code max_open_files} of one shard (-1: unlimited)
 * @param shardIdleClose an open shard unused this long is flushed and closed
 * @param maxOpenShards above this many open shards, the least recently used are closed
 * @param filters how the shards' Bloom filters are sized, bounded and rebuilt
 */
public record StorageOptions(
        Path dataDir,
        WalMode walMode,
        long blockCacheBytes,
        long writeBufferBytes,
        long shardWriteBufferBytes,
        int backgroundThreads,
        int maxOpenFilesPerShard,
        Duration shardIdleClose,
        int maxOpenShards,
        FilterOptions filters) {

    /** With the default filter options. */
    public StorageOptions(
            Path dataDir,
            WalMode walMode,
            long blockCacheBytes,
            long writeBufferBytes,
            long shardWriteBufferBytes,
            int backgroundThreads,
            int maxOpenFilesPerShard,
            Duration shardIdleClose,
            int maxOpenShards) {
        this(
                dataDir,
                walMode,
                blockCacheBytes,
                writeBufferBytes,
                shardWriteBufferBytes,
                backgroundThreads,
                maxOpenFilesPerShard,
                shardIdleClose,
                maxOpenShards,
                FilterOptions.DEFAULTS);
    }

    public StorageOptions {
        Objects.requireNonNull(dataDir, "dataDir");
        Objects.requireNonNull(filters, "filters");
        Objects.requireNonNull(walMode, "walMode");
        Objects.requireNonNull(shardIdleClose, "shardIdleClose");
        if (blockCacheBytes <= 0 || writeBufferBytes <= 0 || shardWriteBufferBytes <= 0) {
            throw new IllegalArgumentException("cache and write buffer sizes must be > 0");
        }
        if (backgroundThreads < 1) {
            throw new IllegalArgumentException("background threads must be >= 1");
        }
        if (maxOpenShards < 1) {
            throw new IllegalArgumentException("max open shards must be >= 1");
        }
        if (maxOpenFilesPerShard == 0 || maxOpenFilesPerShard < -1) {
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
                8L << 20,
                2,
                64,
                Duration.ofMinutes(5),
                1024);
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
                shardWriteBufferBytes,
                backgroundThreads,
                maxOpenFilesPerShard,
                shardIdleClose,
                maxOpenShards,
                filters);
    }

    public StorageOptions withFilters(FilterOptions newFilters) {
        return new StorageOptions(
                dataDir,
                walMode,
                blockCacheBytes,
                writeBufferBytes,
                shardWriteBufferBytes,
                backgroundThreads,
                maxOpenFilesPerShard,
                shardIdleClose,
                maxOpenShards,
                newFilters);
    }
}
