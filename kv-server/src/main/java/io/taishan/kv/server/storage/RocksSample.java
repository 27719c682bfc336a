package io.taishan.kv.server.storage;

import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.rocksdb.TickerType;

/**
 * RocksDB's state of one node at one moment ({@link StorageEngine#sampleRocks}): per-store
 * properties summed over the open stores, the shared block cache, and the node-wide tickers.
 *
 * @param sampledStores open stores whose properties are in the sums
 * @param busyTables tables left out because their lock was held at that moment
 * @param memtableBytes {@code rocksdb.cur-size-all-mem-tables}: active and immutable memtables
 * @param pendingCompactionBytes {@code rocksdb.estimate-pending-compaction-bytes}
 * @param runningCompactions {@code rocksdb.num-running-compactions}
 * @param writeStoppedStores stores whose {@code rocksdb.is-write-stopped} is 1
 * @param writeDelayedStores stores whose {@code rocksdb.actual-delayed-write-rate} is not 0
 * @param estimatedEntries {@code rocksdb.estimate-num-keys}
 * @param liveSstBytes {@code rocksdb.live-sst-files-size}
 * @param tickers the node-wide tickers of {@link #TICKERS}; empty without statistics
 * @param sampleNanos how long this sample took
 */
public record RocksSample(
        int sampledStores,
        int busyTables,
        long memtableBytes,
        long pendingCompactionBytes,
        long runningCompactions,
        int writeStoppedStores,
        int writeDelayedStores,
        long estimatedEntries,
        long liveSstBytes,
        long blockCacheCapacityBytes,
        long blockCacheUsageBytes,
        long blockCachePinnedBytes,
        Map<TickerType, Long> tickers,
        long sampleNanos) {

    /**
     * The tickers read: what says whether the cache works, writes stall and compaction keeps up.
     */
    public static final List<TickerType> TICKERS =
            List.of(
                    TickerType.BLOCK_CACHE_HIT,
                    TickerType.BLOCK_CACHE_MISS,
                    TickerType.STALL_MICROS,
                    TickerType.BYTES_WRITTEN,
                    TickerType.BYTES_READ,
                    TickerType.COMPACT_READ_BYTES,
                    TickerType.COMPACT_WRITE_BYTES,
                    TickerType.FLUSH_WRITE_BYTES,
                    TickerType.BLOOM_FILTER_USEFUL,
                    TickerType.MEMTABLE_HIT,
                    TickerType.MEMTABLE_MISS);

    /** Filled by the engine and the shards; fields, so a shard adds to it without allocating. */
    static final class Builder {
        int sampledStores;
        int busyTables;
        long memtableBytes;
        long pendingCompactionBytes;
        long runningCompactions;
        int writeStoppedStores;
        int writeDelayedStores;
        long estimatedEntries;
        long liveSstBytes;
        long blockCacheCapacityBytes;
        long blockCacheUsageBytes;
        long blockCachePinnedBytes;
        final Map<TickerType, Long> tickers = new EnumMap<>(TickerType.class);

        RocksSample build(long sampleNanos) {
            return new RocksSample(
                    sampledStores,
                    busyTables,
                    memtableBytes,
                    pendingCompactionBytes,
                    runningCompactions,
                    writeStoppedStores,
                    writeDelayedStores,
                    estimatedEntries,
                    liveSstBytes,
                    blockCacheCapacityBytes,
                    blockCacheUsageBytes,
                    blockCachePinnedBytes,
                    Collections.unmodifiableMap(new EnumMap<>(tickers)),
                    sampleNanos);
        }
    }

    /** The ticker's count since the engine opened, or -1 without statistics. */
    public long ticker(TickerType ticker) {
        Long v = tickers.get(ticker);
        return v == null ? -1 : v;
    }
}
