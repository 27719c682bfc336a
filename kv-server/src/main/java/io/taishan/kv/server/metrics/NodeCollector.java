package io.taishan.kv.server.metrics;

import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.taishan.kv.proto.WriteOp;
import io.taishan.kv.server.rpc.WriteStats;
import io.taishan.kv.server.storage.DataDirUsage;
import io.taishan.kv.server.storage.ExpirySweeper;
import io.taishan.kv.server.storage.RocksSample;
import io.taishan.kv.server.storage.StorageEngine;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.annotation.Nullable;
import org.rocksdb.TickerType;

/**
 * The node's storage, write, expiry and RocksDB metrics, taken when Prometheus scrapes. What costs
 * more than reading a few counters is sampled at most once per {@code sampleInterval} and reused by
 * the scrapes in between: the walk of the data directory (one stat per file) and the RocksDB
 * properties of the open stores (a few JNI reads per open store, never waiting for a table lock).
 * Scrapes are serialized, so two scrapers never sample twice at once.
 *
 * <p>Attached once the node serves and detached before its storage closes, under the same monitor
 * as a scrape: no scrape reads a RocksDB object that is being freed.
 */
final class NodeCollector implements MultiCollector {
    /** What the collector reads; all of one node. */
    record Sources(StorageEngine storage, WriteStats writes, ExpirySweeper expiry, Path dataDir) {}

    private static final String PREFIX = "taishan_kv_";

    private final long sampleIntervalNanos;
    @Nullable private Sources sources;
    @Nullable private FileStore fileStore;
    @Nullable private DataDirUsage disk;
    private long diskSampledAtNanos;
    private long diskSampledAtMillis;
    @Nullable private RocksSample rocks;
    private long rocksSampledAtNanos;

    NodeCollector(Duration sampleInterval) {
        this.sampleIntervalNanos = sampleInterval.toNanos();
    }

    synchronized void attach(Sources sources) {
        this.sources = sources;
        try {
            this.fileStore = Files.getFileStore(sources.dataDir());
        } catch (IOException e) {
            this.fileStore = null;
        }
    }

    synchronized void detach() {
        sources = null;
        rocks = null;
        disk = null;
    }

    @Override
    public synchronized MetricSnapshots collect() {
        List<MetricSnapshot> out = new ArrayList<>();
        Sources s = sources;
        if (s == null) {
            return new MetricSnapshots(out);
        }
        StorageEngine storage = s.storage();
        long now = System.nanoTime();

        gauge(out, "tables", "Tables in the node's catalog", storage.tableCount());
        gauge(
                out,
                "open_stores",
                "RocksDB instances open (each holds the key ranges of several shards of a table)",
                storage.openStoreCount());
        gauge(
                out,
                "max_open_stores",
                "stores.max-open after the start-up clamp to the file descriptor limit",
                storage.options().maxOpenStores());
        gauge(
                out,
                "leases_fenced_at_start",
                "1 if this start fenced every earlier lease (the previous run stopped uncleanly"
                        + " and may have lost writes)",
                storage.leasesFencedAtStart() ? 1 : 0);
        gauge(
                out,
                "filter_bytes",
                "Off-heap bytes of the shards' Bloom filters (live, rebuilding, copies in flight)",
                storage.filterBytes());
        gauge(
                out,
                "filter_limit_bytes",
                "filter.max-memory-bytes after the start-up clamp",
                storage.filterLimitBytes());
        gauge(
                out,
                "filter_rebuilds_pending",
                "Filter rebuilds running or queued",
                storage.filterRebuildsPending());

        WriteStats w = s.writes();
        counter(
                out,
                "write_shard_batches",
                "Per-shard parts of applied Write requests (each one RocksDB write batch, split at"
                        + " snapshot markers)",
                w.shardBatches());
        CounterSnapshot.Builder ops =
                CounterSnapshot.builder()
                        .name(PREFIX + "write_ops")
                        .help("Ops of applied Write requests, by kind (snapshot: markers)");
        opPoint(ops, "put", w.ops(WriteOp.OpCase.PUT));
        opPoint(ops, "delete", w.ops(WriteOp.OpCase.DELETE));
        opPoint(ops, "delete_range", w.ops(WriteOp.OpCase.DELETE_RANGE));
        opPoint(ops, "append", w.ops(WriteOp.OpCase.APPEND));
        opPoint(ops, "snapshot", w.ops(WriteOp.OpCase.SNAPSHOT));
        out.add(ops.build());
        out.add(
                CounterSnapshot.builder()
                        .name(PREFIX + "shard_snapshots_taken")
                        .help(
                                "Shard snapshots answered by markers and Snapshot calls; reused ="
                                        + " hard links of the previous one (no write since)")
                        .dataPoint(point(w.snapshots(), "reused", "false"))
                        .dataPoint(point(w.reusedSnapshots(), "reused", "true"))
                        .build());

        ExpirySweeper expiry = s.expiry();
        counter(out, "ttl_sweeps", "Expiry sweeps of the whole node completed", expiry.sweeps());
        counter(
                out,
                "ttl_expired_entries",
                "Entries of TTL'd states deleted by expiry sweeps",
                expiry.expiredEntries());
        counter(
                out,
                "ttl_swept_entries",
                "Entries of TTL'd states read by expiry sweeps",
                expiry.sweptEntries());
        gauge(
                out,
                "ttl_last_sweep_timestamp_seconds",
                "When the last complete expiry sweep ended (Unix time; 0 before the first)",
                expiry.lastSweepEndMillis() / 1e3);
        gauge(
                out,
                "ttl_last_sweep_duration_seconds",
                "How long the last complete expiry sweep took",
                expiry.lastSweepNanos() / 1e9);

        if (disk == null || now - diskSampledAtNanos >= sampleIntervalNanos) {
            disk = storage.measureDataDir();
            diskSampledAtNanos = now;
            diskSampledAtMillis = System.currentTimeMillis();
        }
        gauge(
                out,
                "data_dir_bytes",
                "Bytes of the distinct files under the data dir (a hard-linked file counts once)",
                disk.totalBytes());
        gauge(out, "live_data_bytes", "Bytes of the stores' live RocksDB files", disk.liveBytes());
        gauge(
                out,
                "shard_snapshots",
                "Shard snapshots held (each references a cut)",
                storage.shardSnapshotCount());
        gauge(
                out,
                "cuts",
                "Cuts on disk: hard-link checkpoints of stores, which shard snapshots reference",
                disk.snapshotCount());
        gauge(
                out,
                "cut_bytes",
                "The cuts' sizes summed (a file shared by several counts in each)",
                disk.snapshotBytes());
        gauge(out, "data_dir_files", "Files under the data dir", disk.files());
        gauge(
                out,
                "disk_sample_timestamp_seconds",
                "When the data dir figures were taken (Unix time)",
                diskSampledAtMillis / 1e3);
        gauge(
                out,
                "disk_sample_duration_seconds",
                "How long the walk of the data dir took",
                disk.walkNanos() / 1e9);
        FileStore store = fileStore;
        if (store != null) {
            try {
                gauge(
                        out,
                        "filesystem_available_bytes",
                        "Bytes available to the server on the data dir's file system",
                        store.getUsableSpace());
                gauge(
                        out,
                        "filesystem_size_bytes",
                        "Size of the data dir's file system",
                        store.getTotalSpace());
            } catch (IOException e) {
                // Left out of this scrape.
            }
        }

        if (rocks == null || now - rocksSampledAtNanos >= sampleIntervalNanos) {
            RocksSample fresh = storage.sampleRocks();
            if (fresh != null) {
                rocks = fresh;
                rocksSampledAtNanos = now;
            }
        }
        if (rocks != null) {
            addRocks(out, rocks);
        }
        return new MetricSnapshots(out);
    }

    private static void addRocks(List<MetricSnapshot> out, RocksSample r) {
        gauge(
                out,
                "rocksdb_memtable_bytes",
                "Active and immutable memtables of the open stores (rocksdb.cur-size-all-mem-tables)",
                r.memtableBytes());
        gauge(
                out,
                "rocksdb_pending_compaction_bytes",
                "Bytes compaction has to rewrite to settle the open stores' levels"
                        + " (rocksdb.estimate-pending-compaction-bytes)",
                r.pendingCompactionBytes());
        gauge(
                out,
                "rocksdb_running_compactions",
                "Compactions running in the open stores",
                r.runningCompactions());
        gauge(
                out,
                "rocksdb_write_stopped_stores",
                "Open stores whose writes RocksDB has stopped (rocksdb.is-write-stopped)",
                r.writeStoppedStores());
        gauge(
                out,
                "rocksdb_write_delayed_stores",
                "Open stores whose writes RocksDB slows down (rocksdb.actual-delayed-write-rate"
                        + " > 0)",
                r.writeDelayedStores());
        gauge(
                out,
                "rocksdb_estimated_entries",
                "RocksDB's estimate of the entries in the open stores (rocksdb.estimate-num-keys)",
                r.estimatedEntries());
        gauge(
                out,
                "rocksdb_live_sst_bytes",
                "SST files of the open stores' current versions (rocksdb.live-sst-files-size)",
                r.liveSstBytes());
        gauge(
                out,
                "rocksdb_block_cache_capacity_bytes",
                "Capacity of the block cache all stores share",
                r.blockCacheCapacityBytes());
        gauge(
                out,
                "rocksdb_block_cache_usage_bytes",
                "Bytes in the block cache (data, index and filter blocks, memtables charged to it)",
                r.blockCacheUsageBytes());
        gauge(
                out,
                "rocksdb_block_cache_pinned_bytes",
                "Bytes of the block cache pinned by readers and L0 index and filter blocks",
                r.blockCachePinnedBytes());
        gauge(
                out,
                "rocksdb_sampled_stores",
                "Open stores whose properties are in the last RocksDB sample",
                r.sampledStores());
        gauge(
                out,
                "rocksdb_busy_tables",
                "Tables left out of the last RocksDB sample because their lock was held",
                r.busyTables());
        gauge(
                out,
                "rocksdb_sample_duration_seconds",
                "How long the last RocksDB sample took",
                r.sampleNanos() / 1e9);
        if (r.tickers().isEmpty()) {
            return;
        }
        ticker(out, r, TickerType.BLOCK_CACHE_HIT, "rocksdb_block_cache_hits", "Block cache hits");
        ticker(
                out,
                r,
                TickerType.BLOCK_CACHE_MISS,
                "rocksdb_block_cache_misses",
                "Block cache misses (each a block read from a file)");
        counter(
                out,
                "rocksdb_write_stall_seconds",
                "Time writes were delayed or stopped by RocksDB (stall.micros)",
                r.ticker(TickerType.STALL_MICROS) / 1e6);
        ticker(
                out,
                r,
                TickerType.BYTES_WRITTEN,
                "rocksdb_written_bytes",
                "Bytes written to the shards (keys and values of every write)");
        ticker(
                out,
                r,
                TickerType.BYTES_READ,
                "rocksdb_read_bytes",
                "Bytes read by point lookups (values found)");
        ticker(
                out,
                r,
                TickerType.COMPACT_READ_BYTES,
                "rocksdb_compaction_read_bytes",
                "Bytes read by compactions");
        ticker(
                out,
                r,
                TickerType.COMPACT_WRITE_BYTES,
                "rocksdb_compaction_written_bytes",
                "Bytes written by compactions");
        ticker(
                out,
                r,
                TickerType.FLUSH_WRITE_BYTES,
                "rocksdb_flush_written_bytes",
                "Bytes written by memtable flushes");
        ticker(
                out,
                r,
                TickerType.BLOOM_FILTER_USEFUL,
                "rocksdb_bloom_filter_useful",
                "Point lookups an SST Bloom filter answered without reading the file");
        ticker(
                out,
                r,
                TickerType.MEMTABLE_HIT,
                "rocksdb_memtable_hits",
                "Lookups found in a memtable");
        ticker(
                out,
                r,
                TickerType.MEMTABLE_MISS,
                "rocksdb_memtable_misses",
                "Lookups not found in the memtables");
    }

    private static void ticker(
            List<MetricSnapshot> out, RocksSample r, TickerType t, String name, String help) {
        counter(out, name, help + " (RocksDB ticker " + t.name() + ")", r.ticker(t));
    }

    private static void gauge(List<MetricSnapshot> out, String name, String help, double value) {
        out.add(
                GaugeSnapshot.builder()
                        .name(PREFIX + name)
                        .help(help)
                        .dataPoint(
                                GaugeSnapshot.GaugeDataPointSnapshot.builder().value(value).build())
                        .build());
    }

    private static void counter(List<MetricSnapshot> out, String name, String help, double value) {
        out.add(
                CounterSnapshot.builder()
                        .name(PREFIX + name)
                        .help(help)
                        .dataPoint(
                                CounterSnapshot.CounterDataPointSnapshot.builder()
                                        .value(value)
                                        .build())
                        .build());
    }

    private static CounterSnapshot.CounterDataPointSnapshot point(
            double value, String label, String labelValue) {
        return CounterSnapshot.CounterDataPointSnapshot.builder()
                .value(value)
                .labels(Labels.of(label, labelValue))
                .build();
    }

    private static void opPoint(CounterSnapshot.Builder ops, String op, long value) {
        ops.dataPoint(point(value, "op", op));
    }
}
