package io.taishan.kv.server.storage;

import java.util.EnumSet;
import javax.annotation.Nullable;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.Env;
import org.rocksdb.HistogramType;
import org.rocksdb.InfoLogLevel;
import org.rocksdb.LRUCache;
import org.rocksdb.Logger;
import org.rocksdb.Options;
import org.rocksdb.Priority;
import org.rocksdb.RocksDB;
import org.rocksdb.Statistics;
import org.rocksdb.TickerType;
import org.rocksdb.WriteBufferManager;
import org.rocksdb.WriteOptions;
import org.slf4j.LoggerFactory;

/**
 * What every shard's RocksDB instance shares, so that memory and threads are bounded per node, not
 * per shard: one block cache (which also holds index and filter blocks), one write-buffer manager
 * charged to that cache, the default Env's background pools, one logger (which also saves a LOG
 * file per shard), and with metrics on one {@link Statistics} that every shard counts into, so the
 * node's tickers are read in a few calls however many shards are open.
 */
final class RocksResources implements AutoCloseable {
    static {
        RocksDB.loadLibrary();
    }

    private static final long ARENA_BLOCK_BYTES = 64 << 10;

    /**
     * RocksDB preallocates 4 MiB per MANIFEST by default: 4 GiB of disk for 1,024 open shards whose
     * manifests hold a few KiB each. A manifest that outgrows this just extends.
     */
    private static final long MANIFEST_PREALLOCATION_BYTES = 64 << 10;

    /**
     * Every checkpoint flushes each shard, and every flush appends a version edit (~170 bytes) to
     * the MANIFEST, which RocksDB rewrites compactly only past {@code max_manifest_file_size}
     * (default 1 GiB). Each snapshot copies the MANIFEST, so a job checkpointing every second grew
     * each shard's by ~600 KiB an hour, and its disk and the bytes every checkpoint copies and
     * fsyncs with it (the soak, docs/soak.md: 17 to 45 MiB in 16 minutes for 128 shards). Past this
     * size RocksDB starts a new MANIFEST holding only the live version, a few KiB here.
     */
    static final long MAX_MANIFEST_BYTES = MANIFEST_PREALLOCATION_BYTES;

    /**
     * RocksDB's non-associative string append with Flink's list delimiter ','. Flink's RocksDB
     * backend uses it for the reason we do: it joins all of a key's operands in one full merge,
     * linear in the list's size, where the associative {@code stringappend} copies the growing
     * value once per operand (quadratic: a read after 200,000 appends took ~6 s, measured in
     * shared/DEPENDENCIES.md). The bytes it produces are the same.
     */
    static final String APPEND_MERGE_OPERATOR = "stringappendtest";

    private static final org.slf4j.Logger LOG = LoggerFactory.getLogger("io.taishan.kv.rocksdb");

    private final StorageOptions options;
    private final LRUCache blockCache;
    private final WriteBufferManager writeBufferManager;
    private final BloomFilter bloomFilter;
    private final BlockBasedTableConfig tableConfig;
    private final Logger rocksLogger;
    private final WriteOptions writeOptions;
    @Nullable private final Statistics statistics;

    /**
     * @param statistics whether every shard counts into one node-wide {@link Statistics} (tickers
     *     only: every histogram is ignored, so no operation reads the clock for it)
     */
    RocksResources(StorageOptions options, boolean statistics) {
        this.options = options;
        this.statistics = statistics ? new Statistics(EnumSet.allOf(HistogramType.class)) : null;
        this.blockCache = new LRUCache(options.blockCacheBytes());
        this.writeBufferManager = new WriteBufferManager(options.writeBufferBytes(), blockCache);
        this.bloomFilter = new BloomFilter(10, false);
        this.tableConfig =
                new BlockBasedTableConfig()
                        .setBlockCache(blockCache)
                        .setFilterPolicy(bloomFilter)
                        .setCacheIndexAndFilterBlocks(true)
                        .setPinL0FilterAndIndexBlocksInCache(true)
                        .setBlockSize(16 * 1024);
        this.rocksLogger =
                // Errors only: RocksDB warns on every write stall, which a bulk load makes often.
                new Logger(InfoLogLevel.ERROR_LEVEL) {
                    @Override
                    protected void log(InfoLogLevel level, String message) {
                        LOG.error(message);
                    }
                };
        this.writeOptions =
                new WriteOptions()
                        .setDisableWAL(!options.walEnabled())
                        .setSync(options.walMode() == WalMode.SYNC);
        Env env = Env.getDefault();
        // The default Env's pools are process-wide; only ever grow them, another server in this
        // JVM may have asked for more.
        int compactions = Math.max(1, options.backgroundThreads() - 1);
        if (env.getBackgroundThreads(Priority.LOW) < compactions) {
            env.setBackgroundThreads(compactions, Priority.LOW);
        }
        if (env.getBackgroundThreads(Priority.HIGH) < 1) {
            env.setBackgroundThreads(1, Priority.HIGH);
        }
    }

    /** Options for one store; the caller closes them after the instance. */
    Options newStoreOptions() {
        Options shard =
                new Options()
                        .setCreateIfMissing(true)
                        .setEnv(Env.getDefault())
                        .setWriteBufferManager(writeBufferManager)
                        .setMergeOperatorName(APPEND_MERGE_OPERATOR)
                        .setLogger(rocksLogger)
                        .setTableFormatConfig(tableConfig)
                        .setWriteBufferSize(options.storeWriteBufferBytes())
                        // The default (write buffer / 8) would make a memtable holding one
                        // small write cost 512 KiB; with thousands of open shards that is what
                        // memory goes to.
                        .setArenaBlockSize(ARENA_BLOCK_BYTES)
                        .setManifestPreallocationSize(MANIFEST_PREALLOCATION_BYTES)
                        .setMaxManifestFileSize(MAX_MANIFEST_BYTES)
                        .setMaxWriteBufferNumber(4)
                        .setMaxBackgroundJobs(options.backgroundThreads())
                        .setMaxOpenFiles(options.maxOpenFilesPerStore())
                        .setStatsDumpPeriodSec(0)
                        .setStatsPersistPeriodSec(0)
                        .setAvoidUnnecessaryBlockingIO(true);
        if (statistics != null) {
            shard.setStatistics(statistics);
        }
        return shard;
    }

    WriteOptions writeOptions() {
        return writeOptions;
    }

    boolean walEnabled() {
        return options.walEnabled();
    }

    long blockCacheUsage() {
        return blockCache.getUsage();
    }

    long blockCachePinnedUsage() {
        return blockCache.getPinnedUsage();
    }

    /** The node-wide ticker, or -1 without statistics. Not after {@link #close()}. */
    long ticker(TickerType ticker) {
        return statistics == null ? -1 : statistics.getTickerCount(ticker);
    }

    boolean statisticsEnabled() {
        return statistics != null;
    }

    @Override
    public void close() {
        writeOptions.close();
        rocksLogger.close();
        bloomFilter.close();
        writeBufferManager.close();
        blockCache.close();
        if (statistics != null) {
            statistics.close();
        }
    }
}
