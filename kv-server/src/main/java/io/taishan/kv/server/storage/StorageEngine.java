package io.taishan.kv.server.storage;

import com.sun.management.UnixOperatingSystemMXBean;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.server.durable.CutTransfers;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import org.rocksdb.TickerType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The storage of one node: the table catalog and every table's stores, under one data directory:
 *
 * <pre>
 * data/LOCK                  held while a server uses the directory
 * data/LAYOUT                the layout version (2: shards as key ranges of stores)
 * data/epoch-counter         highest epoch handed out on this node
 * data/lease-floor           epochs below it are fenced (after a lossy crash)
 * data/server-run            running / stopped cleanly, boot id, WAL mode
 * data/tables/&lt;table&gt;/      one table: see {@link TableStore}
 * data/tmp/, data/trash/     staging and deletion, emptied at start
 * </pre>
 *
 * <p>A shard is a key range of one of its table's {@link RangeStore}s, not a RocksDB instance of
 * its own, so what a table costs (files, descriptors, memtables, the work of a checkpoint or a
 * restore) follows its stores and its data, not its key groups. Stores open lazily and are closed
 * (after a flush) when idle or when too many are open.
 */
public final class StorageEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StorageEngine.class);

    private final StorageOptions options;
    private final Path tablesDir;
    private final Path tmpDir;
    private final Path trashDir;
    private final FileChannel lockChannel;
    private final FileLock dirLock;
    private final RocksResources resources;
    private final NodeFilters filters;
    private final EpochCounter epochs;
    private final ServerRunRecord runRecord;
    private volatile boolean leasesFencedAtStart;
    private final ConcurrentHashMap<String, TableStore> tables = new ConcurrentHashMap<>();
    private final Object catalogLock = new Object();
    private final Set<RangeStore> openStores = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService maintenance;
    private final AtomicBoolean evictionScheduled = new AtomicBoolean();
    private volatile boolean closed;

    /**
     * An open store holds LOCK, MANIFEST, the WAL, LOG-less directory handles (about 6 file
     * descriptors) plus one per open SST, at most {@code max_open_files} of them.
     */
    static final int FDS_PER_OPEN_STORE_BEYOND_SSTS = 8;

    /** The layout this server reads and writes; see the class doc. */
    static final String LAYOUT_FILE = "LAYOUT";

    static final int LAYOUT_VERSION = 2;

    /** File descriptors kept for sockets, jars and the JVM. */
    static final int RESERVED_FDS = 512;

    /**
     * Held while the node-wide RocksDB objects are read for metrics and while they are closed: a
     * read of a freed native object would crash the process.
     */
    private final Object resourcesLock = new Object();

    private StorageEngine(
            StorageOptions options, boolean statistics, FileChannel lockChannel, FileLock dirLock)
            throws IOException {
        options = withinFileLimit(options);
        this.options = options;
        Path data = options.dataDir();
        this.tablesDir = Files.createDirectories(data.resolve("tables"));
        this.tmpDir = data.resolve("tmp");
        this.trashDir = data.resolve("trash");
        this.lockChannel = lockChannel;
        this.dirLock = dirLock;
        logUnfinishedDownloads(tmpDir);
        DurableFiles.deleteTree(tmpDir);
        DurableFiles.deleteTree(trashDir);
        Files.createDirectories(tmpDir);
        Files.createDirectories(trashDir);
        checkLayout(data, tablesDir);
        this.epochs = new EpochCounter(data.resolve("epoch-counter"), data.resolve("lease-floor"));
        this.runRecord = new ServerRunRecord(data);
        this.resources = new RocksResources(options, statistics);
        this.filters = new NodeFilters(options.filters());
        loadCatalog();
        fenceLeasesIfWritesWereLost();
        this.maintenance =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "taishan-kv-shard-maintenance");
                            t.setDaemon(true);
                            return t;
                        });
        long periodMillis = Math.max(50, Math.min(10_000, options.storeIdleClose().toMillis() / 4));
        maintenance.scheduleWithFixedDelay(
                this::closeIdleStoresQuietly, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
        // Uploads evict at once; the age rule also needs tables nobody uploads to any more.
        long evictMillis =
                Math.max(1_000, Math.min(60_000, options.snapshotCache().maxAge().toMillis() / 4));
        maintenance.scheduleWithFixedDelay(
                this::evictLocalSnapshotsQuietly, evictMillis, evictMillis, TimeUnit.MILLISECONDS);
    }

    /** Applies the snapshot cache rule ({@link SnapshotCatalog#evict}) to every table. */
    public void evictLocalSnapshots() {
        for (TableStore t : tables.values()) {
            t.evictLocalSnapshots();
        }
    }

    private void evictLocalSnapshotsQuietly() {
        try {
            evictLocalSnapshots();
        } catch (RuntimeException e) {
            LOG.warn("Evicting local snapshot copies failed", e);
        }
    }

    /**
     * Downloads of cuts from checkpoint storage go into {@code tmp/} ({@link DurableSnapshots}), so
     * emptying it at start removes what a crash left of them; said, since it means a restore did
     * not finish.
     */
    private static void logUnfinishedDownloads(Path tmpDir) throws IOException {
        if (!Files.isDirectory(tmpDir)) {
            return;
        }
        int unfinished = 0;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(tmpDir)) {
            for (Path p : ds) {
                if (CutTransfers.isDownloadLeftover(p) || DurableSnapshots.isFetchDir(p)) {
                    unfinished++;
                }
            }
        }
        if (unfinished > 0) {
            LOG.warn(
                    "Removing {} unfinished download(s) of cuts from checkpoint storage left in {}"
                            + " by the previous run",
                    unfinished,
                    tmpDir);
        }
    }

    /**
     * Refuses a data dir of the earlier layout (one RocksDB instance per shard, {@code
     * tables/<table>/shard-<n>/}), which this server cannot read: it says how to move in one line.
     * Marks a new or empty data dir with this layout.
     */
    private static void checkLayout(Path data, Path tablesDir) throws IOException {
        Path marker = data.resolve(LAYOUT_FILE);
        if (Files.exists(marker)) {
            String text = Files.readString(marker, StandardCharsets.US_ASCII).trim();
            if (!text.equals(Integer.toString(LAYOUT_VERSION))) {
                throw new StorageStartupException(
                        "data dir "
                                + data
                                + " has layout version "
                                + text
                                + ", this kv-server reads only "
                                + LAYOUT_VERSION);
            }
            return;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(tablesDir)) {
            for (Path table : ds) {
                try (DirectoryStream<Path> inside = Files.newDirectoryStream(table, "shard-*")) {
                    if (inside.iterator().hasNext()) {
                        throw new StorageStartupException(
                                "data dir "
                                        + data
                                        + " holds tables of the earlier per-shard layout (one"
                                        + " RocksDB per key group), which this kv-server does not"
                                        + " read: take a canonical savepoint of each job with the"
                                        + " earlier version, start this one on an empty data dir"
                                        + " and restore the jobs from the savepoints"
                                        + " (docs/operations.md, Upgrades)");
                    }
                }
            }
        }
        DurableFiles.writeAtomically(
                marker, Integer.toString(LAYOUT_VERSION).getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * Opens the data directory: creates it if needed and locks it against a second server.
     *
     * @throws StorageStartupException with a one-line reason when the directory is unusable
     */
    public static StorageEngine open(StorageOptions options) {
        return open(options, false);
    }

    /**
     * As {@link #open(StorageOptions)}; with {@code statistics}, every shard counts into one
     * node-wide RocksDB {@code Statistics} (tickers only), read by {@link #sampleRocks}.
     */
    public static StorageEngine open(StorageOptions options, boolean statistics) {
        Path data = options.dataDir().toAbsolutePath();
        try {
            Files.createDirectories(data);
        } catch (IOException e) {
            throw new StorageStartupException(
                    "data dir " + data + " cannot be created: " + describe(e), e);
        }
        if (!Files.isWritable(data) || !Files.isDirectory(data)) {
            throw new StorageStartupException("data dir " + data + " is not a writable directory");
        }
        FileChannel channel;
        try {
            channel =
                    FileChannel.open(
                            data.resolve("LOCK"),
                            StandardOpenOption.CREATE,
                            StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new StorageStartupException(
                    "data dir " + data + " is not writable: " + describe(e), e);
        }
        FileLock lock;
        try {
            lock = channel.tryLock();
        } catch (OverlappingFileLockException | IOException e) {
            lock = null;
        }
        if (lock == null) {
            closeQuietly(channel);
            throw new StorageStartupException(
                    "data dir " + data + " is in use by another kv-server");
        }
        try {
            return new StorageEngine(options.withDataDir(data), statistics, channel, lock);
        } catch (StorageStartupException e) {
            closeQuietly(channel);
            throw e;
        } catch (IOException | RuntimeException e) {
            closeQuietly(channel);
            throw new StorageStartupException(
                    "data dir " + data + " cannot be opened: " + describe(e), e);
        }
    }

    /** The file descriptors one open store may hold at most. */
    static long fdsPerOpenStore(StorageOptions options) {
        int ssts = options.maxOpenFilesPerStore() < 0 ? 1024 : options.maxOpenFilesPerStore();
        return ssts + FDS_PER_OPEN_STORE_BEYOND_SSTS;
    }

    /**
     * Lowers max open stores to what the process's file-descriptor limit allows: running out of
     * descriptors fails RocksDB's own background work, not just the next open.
     */
    private static StorageOptions withinFileLimit(StorageOptions options) {
        long maxFds = maxFileDescriptors();
        if (maxFds <= 0) {
            return options;
        }
        long perStore = fdsPerOpenStore(options);
        int fit = (int) Math.max(1, (maxFds - RESERVED_FDS) / perStore);
        if (options.maxOpenStores() <= fit) {
            return options;
        }
        LOG.warn(
                "stores.max-open {} needs up to {} file descriptors but the limit is {}:"
                        + " using {} (raise ulimit -n to allow more)",
                options.maxOpenStores(),
                options.maxOpenStores() * perStore + RESERVED_FDS,
                maxFds,
                fit);
        return new StorageOptions(
                options.dataDir(),
                options.walMode(),
                options.blockCacheBytes(),
                options.writeBufferBytes(),
                options.storeWriteBufferBytes(),
                options.backgroundThreads(),
                options.maxOpenFilesPerStore(),
                options.storeIdleClose(),
                fit,
                options.filters(),
                options.snapshotCache());
    }

    private static long maxFileDescriptors() {
        if (ManagementFactory.getOperatingSystemMXBean()
                instanceof UnixOperatingSystemMXBean unix) {
            return unix.getMaxFileDescriptorCount();
        }
        return -1;
    }

    private static String describe(Exception e) {
        String kind = e.getClass().getSimpleName();
        return e.getMessage() == null ? kind : kind + ": " + e.getMessage();
    }

    private static void closeQuietly(FileChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing left to do
        }
    }

    /**
     * A crash must never be survived silently: when the previous run stopped without flushing every
     * shard and its {@link WalMode} cannot vouch for what it acknowledged, every lease it issued is
     * fenced before anything is served, so each writer fails over to its last checkpoint instead of
     * going on over a shard that forgot part of what it acknowledged. Then this run is recorded as
     * running, so that its own unclean stop is recognized too.
     */
    private void fenceLeasesIfWritesWereLost() throws IOException {
        ServerRunRecord.PreviousRun previous = runRecord.previous();
        boolean lossy;
        String why;
        if (previous == null) {
            // A data dir from before the run record existed: no proof of a clean stop.
            lossy = !tables.isEmpty();
            why = "the data dir has no record of a clean stop";
        } else {
            lossy = !previous.keptEveryAcknowledgedWrite();
            why = previous.describe();
        }
        if (lossy) {
            epochs.fenceEveryLease();
            leasesFencedAtStart = true;
            LOG.warn(
                    "{} and its writes since each shard's last flush may be lost: every lease"
                            + " issued before (epoch < {}) is fenced; writers must restore from"
                            + " their last checkpoint",
                    why,
                    epochs.floor());
        } else if (previous != null && !previous.stoppedCleanly()) {
            LOG.warn(
                    "{}; with WAL {} every acknowledged write survived it: leases stay valid",
                    previous.describe(),
                    previous.walMode());
        }
        runRecord.running(options.walMode());
    }

    /** Whether this start fenced every earlier lease because the previous run lost writes. */
    public boolean leasesFencedAtStart() {
        return leasesFencedAtStart;
    }

    private void loadCatalog() throws IOException {
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(tablesDir)) {
            for (Path dir : ds) {
                if (!Files.isRegularFile(dir.resolve(TableMeta.FILE_NAME))) {
                    LOG.warn("Ignoring {}: no {}", dir, TableMeta.FILE_NAME);
                    continue;
                }
                TableMeta meta = TableMeta.read(dir);
                tables.put(meta.name(), new TableStore(this, meta, dir));
            }
        }
        LOG.info("Loaded {} table(s) from {}", tables.size(), options.dataDir());
    }

    public StorageOptions options() {
        return options;
    }

    // ---- catalog

    /** The table and whether this call created it. */
    public record Creation(TableMeta table, boolean created) {}

    public Creation createTable(String name, int shardCount, boolean ifNotExists) {
        TableMeta.checkName(name);
        TableMeta.checkShardCount(name, shardCount);
        synchronized (catalogLock) {
            checkOpen();
            TableStore existing = tables.get(name);
            if (existing != null) {
                if (ifNotExists && existing.shardCount() == shardCount) {
                    return new Creation(existing.meta(), false);
                }
                throw new KvServerException(
                        ErrorCode.TABLE_EXISTS,
                        "table '"
                                + name
                                + "' exists with "
                                + existing.shardCount()
                                + " shards"
                                + (ifNotExists ? ", not " + shardCount : ""));
            }
            TableMeta meta = new TableMeta(name, shardCount, System.currentTimeMillis());
            Path dir = tablesDir.resolve(name);
            try {
                DurableFiles.deleteTree(dir);
                Path staging = Files.createTempDirectory(tmpDir, "table-");
                DurableFiles.writeAtomically(staging.resolve(TableMeta.FILE_NAME), meta.toBytes());
                DurableFiles.moveAtomically(staging, dir);
                tables.put(name, new TableStore(this, meta, dir));
            } catch (IOException e) {
                throw KvServerException.storage("cannot create table '" + name + "'", e);
            }
            return new Creation(meta, true);
        }
    }

    public Optional<TableMeta> table(String name) {
        TableStore t = tables.get(name);
        return t == null ? Optional.empty() : Optional.of(t.meta());
    }

    /** The table, or null if this node has none of that name. */
    @Nullable
    TableStore tableIfExists(String name) {
        checkOpen();
        return tables.get(name);
    }

    /** The table, or TABLE_NOT_FOUND. */
    public TableStore tableStore(String name) {
        checkOpen();
        TableStore t = tables.get(name);
        if (t == null) {
            throw KvServerException.tableNotFound(name);
        }
        return t;
    }

    /** Every table's store, for node-wide background work (expiry). */
    List<TableStore> tableStores() {
        return new ArrayList<>(tables.values());
    }

    /** Shard snapshots held by every table's catalog. */
    public long shardSnapshotCount() {
        long count = 0;
        for (TableStore t : tables.values()) {
            count += t.snapshotCount();
        }
        return count;
    }

    public int tableCount() {
        return tables.size();
    }

    public List<TableMeta> tables() {
        List<TableMeta> result = new ArrayList<>();
        for (TableStore t : tables.values()) {
            result.add(t.meta());
        }
        result.sort(Comparator.comparing(TableMeta::name));
        return result;
    }

    /** Drops the table with all its stores and snapshots. */
    public void dropTable(String name) {
        synchronized (catalogLock) {
            checkOpen();
            TableStore t = tables.remove(name);
            if (t == null) {
                throw KvServerException.tableNotFound(name);
            }
            t.markDropped();
            try {
                DurableFiles.discard(t.dir(), trashDir);
            } catch (IOException e) {
                throw KvServerException.storage(
                        "cannot delete the files of table '" + name + "'", e);
            }
        }
    }

    // ---- open stores

    /** RocksDB instances open now. */
    public int openStoreCount() {
        return openStores.size();
    }

    /**
     * RocksDB's view of the node: the properties of every open store summed, the shared block
     * cache, and the node-wide tickers (with statistics on). Never waits for a table: one whose
     * lock is held right now (a restore, a close) is counted as busy and left out. Cost: a few JNI
     * property reads per open store. Null once the engine is closed.
     */
    @Nullable
    public RocksSample sampleRocks() {
        synchronized (resourcesLock) {
            if (closed) {
                return null;
            }
            long start = System.nanoTime();
            RocksSample.Builder sample = new RocksSample.Builder();
            for (TableStore t : tables.values()) {
                if (!t.addRocksProperties(sample)) {
                    sample.busyTables++;
                }
            }
            sample.blockCacheCapacityBytes = options.blockCacheBytes();
            sample.blockCacheUsageBytes = resources.blockCacheUsage();
            sample.blockCachePinnedBytes = resources.blockCachePinnedUsage();
            if (resources.statisticsEnabled()) {
                for (TickerType t : RocksSample.TICKERS) {
                    sample.tickers.put(t, resources.ticker(t));
                }
            }
            return sample.build(System.nanoTime() - start);
        }
    }

    /**
     * Walks the data directory once: its disk use, the cuts and their bytes. Cost: one stat per
     * file; takes no lock.
     */
    public DataDirUsage measureDataDir() {
        return DataDirUsage.measure(options.dataDir());
    }

    /** Flushes and closes every store idle for the configured time; returns how many. */
    public int closeIdleStores() {
        return closeStoresIdleSince(System.nanoTime() - options.storeIdleClose().toNanos());
    }

    /** Flushes and closes every open store not in use right now; returns how many. */
    public int closeAllIdleStores() {
        return closeStoresIdleSince(System.nanoTime());
    }

    private int closeStoresIdleSince(long idleSinceNanos) {
        int closedCount = 0;
        for (RangeStore s : List.copyOf(openStores)) {
            if (s.lastAccessNanos() - idleSinceNanos <= 0
                    && s.table().tryCloseIfIdle(s, idleSinceNanos)) {
                closedCount++;
            }
        }
        return closedCount;
    }

    private void closeIdleStoresQuietly() {
        try {
            closeIdleStores();
            evictOverLimit();
            for (TableStore t : tables.values()) {
                t.maintainFilters();
            }
        } catch (RuntimeException e) {
            LOG.warn("Closing idle stores failed", e);
        }
    }

    void storeOpened(RangeStore store) {
        openStores.add(store);
        if (openStores.size() > options.maxOpenStores()
                && evictionScheduled.compareAndSet(false, true)
                && !closed) {
            background(
                    () -> {
                        evictionScheduled.set(false);
                        evictOverLimit();
                    });
        }
    }

    void storeClosed(RangeStore store) {
        openStores.remove(store);
    }

    /** Closes the least recently used stores until at most max-open remain (busy ones stay). */
    void evictOverLimit() {
        int excess = openStores.size() - options.maxOpenStores();
        if (excess <= 0) {
            return;
        }
        List<RangeStore> byAge = new ArrayList<>(openStores);
        byAge.sort(Comparator.comparingLong(RangeStore::lastAccessNanos));
        for (RangeStore s : byAge) {
            if (excess <= 0) {
                break;
            }
            if (s.table().tryCloseIfIdle(s, s.lastAccessNanos())) {
                excess--;
            }
        }
    }

    /** Runs {@code task} on the maintenance thread (garbage ranges, evictions), unless closed. */
    void background(Runnable task) {
        if (closed) {
            return;
        }
        try {
            maintenance.execute(
                    () -> {
                        try {
                            task.run();
                        } catch (RuntimeException e) {
                            LOG.warn("Background storage task failed", e);
                        }
                    });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // Shutting down: garbage ranges are removed by the next run's work, evictions moot.
        }
    }

    Path tmpDir() {
        return tmpDir;
    }

    RocksResources resources() {
        return resources;
    }

    NodeFilters filters() {
        return filters;
    }

    /** Off-heap bytes of every shard filter on the node (live, rebuilding, copies in flight). */
    public long filterBytes() {
        return filters.totalBytes();
    }

    /** The node's limit for live and rebuilding filters, after start-up clamping. */
    public long filterLimitBytes() {
        return filters.limitBytes();
    }

    /** Filter rebuilds running or queued. */
    public int filterRebuildsPending() {
        return filters.rebuildsPending();
    }

    /** Where filter copies are streamed to clients, at most the configured number at once. */
    public java.util.concurrent.Executor filterFetchExecutor() {
        return filters.fetchPool();
    }

    long nextEpoch(long current) throws IOException {
        return epochs.next(current);
    }

    /** Epochs below this were issued before an unclean stop that lost writes. */
    long leaseFloor() {
        return epochs.floor();
    }

    Path trashDir() {
        return trashDir;
    }

    public long blockCacheUsage() {
        return resources.blockCacheUsage();
    }

    boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) {
            throw KvServerException.shuttingDown();
        }
    }

    /** Flushes and closes every shard, then releases the data directory. */
    @Override
    public void close() {
        synchronized (catalogLock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        maintenance.shutdownNow();
        try {
            maintenance.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // Rebuilds stop taking shards; a running one is cancelled when its shard closes.
        filters.stopRebuilds();
        boolean allFlushed = true;
        for (TableStore t : tables.values()) {
            allFlushed &= t.shutdown();
        }
        filters.close();
        synchronized (resourcesLock) {
            resources.close();
        }
        if (allFlushed) {
            try {
                runRecord.stopped(options.walMode());
            } catch (IOException e) {
                LOG.error("Could not record the clean stop in {}: {}", options.dataDir(), e);
            }
        } else {
            LOG.error(
                    "Not every shard could be flushed: the next start treats this stop as a crash");
        }
        try {
            dirLock.release();
            lockChannel.close();
        } catch (IOException e) {
            LOG.warn("Could not release the lock of {}: {}", options.dataDir(), e.getMessage());
        }
        LOG.info("Storage in {} closed", options.dataDir());
    }
}
