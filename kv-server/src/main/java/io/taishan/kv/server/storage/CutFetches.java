package io.taishan.kv.server.storage;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.server.durable.CutTransfers;
import io.taishan.kv.server.durable.DownloadRequest;
import io.taishan.kv.server.durable.DownloadResult;
import io.taishan.kv.server.durable.FileOrigins;
import io.taishan.kv.server.durable.RemoteFile;
import io.taishan.kv.server.durable.Transfer;
import io.taishan.kv.server.durable.TransferFailedException;
import io.taishan.kv.server.storage.DurableSnapshots.CutCopy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's downloads of cuts from checkpoint storage: each (source table, durable id) downloaded
 * once however many restores wait for it at once (a rescale restores one cut's shards from several
 * subtasks), the last restore that gives up stopping it; a downloaded cut made a cut of its table
 * and a snapshot of the shards that wait for it. The rules are {@link DurableSnapshots}'s doc.
 *
 * <p>Each copy is downloaded once, too. Cuts of one store share most of their files (a shard with
 * no write since keeps its snapshot in an older cut, so one checkpoint's shards of a store can name
 * several cuts), and a cut's download links the files whose copies a cut of the table on this node
 * already holds ({@link #localCopies}). A fetch that shares copies with fetches under way starts
 * once they have finished, to link their files rather than read the same objects alongside them.
 *
 * <p>Concurrency: one lock orders the table of downloads under way and every registration (a
 * fetched cut moved into its table, snapshots recorded), so a restore either finds the cut in its
 * table or joins its download, never starts a second one. Registrations write a few small files;
 * downloads run outside the lock.
 */
final class CutFetches {
    private static final Logger LOG = LoggerFactory.getLogger(CutFetches.class);

    static final String FETCH_DIR_PREFIX = "fetch-";

    private final StorageEngine engine;
    private final CutTransfers transfers;

    /** Orders the fetches and the registration of fetched cuts. */
    private final Object fetchLock = new Object();

    @GuardedBy("fetchLock")
    private final Map<FetchKey, Fetch> fetching = new HashMap<>();

    CutFetches(StorageEngine engine, CutTransfers transfers) {
        this.engine = engine;
        this.transfers = transfers;
    }

    /**
     * Registers or downloads each needed cut; the result is the bytes this call downloaded.
     *
     * @param needed per (source table, durable id), the (shard, snapshot id) pairs that wait for it
     * @param copies the cuts by durable id, each needed one among them
     */
    DurableSnapshots.Call<Long> fetch(
            Map<FetchKey, List<long[]>> needed,
            Map<String, DurableSnapshots.CutCopy> copies,
            int shardCount,
            Executor finishOn) {
        List<Waiter> waiters = new ArrayList<>();
        try {
            for (Map.Entry<FetchKey, List<long[]>> e : needed.entrySet()) {
                waiters.add(
                        join(
                                e.getKey(),
                                copies.get(e.getKey().durableId()),
                                e.getValue(),
                                shardCount,
                                finishOn));
            }
        } catch (RuntimeException e) {
            waiters.forEach(this::leave);
            throw e;
        }
        Runnable leaveAll = () -> waiters.forEach(this::leave);
        CompletableFuture<Long> result = new CompletableFuture<>();
        AtomicInteger remaining = new AtomicInteger(waiters.size());
        AtomicLong downloaded = new AtomicLong();
        for (Waiter w : waiters) {
            w.bytes.whenComplete(
                    (bytes, e) -> {
                        if (e != null) {
                            // The first failure is the call's; the other cuts stop waiting.
                            result.completeExceptionally(e);
                            leaveAll.run();
                        } else {
                            downloaded.addAndGet(bytes);
                            if (remaining.decrementAndGet() == 0) {
                                result.complete(downloaded.get());
                            }
                        }
                    });
        }
        return new DurableSnapshots.Call<>(result, leaveAll);
    }

    /** A durable cut of a source table on this node. */
    record FetchKey(String table, String durableId) {}

    /** One download under way, and the restores waiting for it. */
    private static final class Fetch {
        final FetchKey key;
        final CutCopy copy;
        final int shardCount;

        /** The remote paths of its data files, to find fetches that share them. */
        final Set<String> copyPaths;

        /** Every (shard, snapshot id) to register once it is there, also of waiters that left. */
        @GuardedBy("fetchLock")
        final List<long[]> markers = new ArrayList<>();

        @GuardedBy("fetchLock")
        final List<Waiter> waiters = new ArrayList<>();

        /** Null until it starts (after the fetches it shares copies with), or if it never did. */
        @GuardedBy("fetchLock")
        @Nullable
        Transfer<DownloadResult> transfer;

        /** Why it never started: stopped before, or it could not. */
        @GuardedBy("fetchLock")
        @Nullable
        KvServerException notStarted;

        /** The cuts it links files from, each retained until it finished. */
        @GuardedBy("fetchLock")
        LocalCopies linked = LocalCopies.NONE;

        Path dir;

        /** Once its transfer settled, or it will never start one. */
        final CompletableFuture<Void> settled = new CompletableFuture<>();

        /**
         * Once its cut is installed or its waiters failed: what fetches sharing copies wait for.
         */
        final CompletableFuture<Void> finished = new CompletableFuture<>();

        Fetch(FetchKey key, CutCopy copy, int shardCount) {
            this.key = key;
            this.copy = copy;
            this.shardCount = shardCount;
            this.copyPaths = new HashSet<>();
            copy.files().forEach(f -> copyPaths.add(f.remote().path()));
        }

        boolean sharesCopiesWith(CutCopy other) {
            return other.files().stream().anyMatch(f -> copyPaths.contains(f.remote().path()));
        }
    }

    /**
     * Files of cuts on this node to link instead of downloading, by data file name, and the cuts
     * retained for them.
     */
    private record LocalCopies(
            @Nullable TableStore table, Map<String, Path> files, List<Long> cutIds) {
        static final LocalCopies NONE = new LocalCopies(null, Map.of(), List.of());

        void release() {
            if (table != null) {
                cutIds.forEach(table.catalog()::release);
            }
        }
    }

    /**
     * A restore waiting for a fetch: the bytes it downloaded (0 but for the one that started it).
     */
    private static final class Waiter {
        @Nullable final Fetch fetch;
        final CompletableFuture<Long> bytes = new CompletableFuture<>();

        Waiter(@Nullable Fetch fetch) {
            this.fetch = fetch;
        }
    }

    /** Registers the markers now if the cut is here, else joins (or starts) its download. */
    private Waiter join(
            FetchKey key, CutCopy copy, List<long[]> markers, int shardCount, Executor finishOn) {
        synchronized (fetchLock) {
            TableStore source = engine.tableIfExists(key.table());
            if (source != null) {
                long cutId = source.catalog().retainCutByDurableId(key.durableId());
                if (cutId >= 0) {
                    try {
                        register(source, cutId, markers);
                    } finally {
                        source.catalog().release(cutId);
                    }
                    Waiter w = new Waiter(null);
                    w.bytes.complete(0L);
                    return w;
                }
            }
            Fetch fetch = fetching.get(key);
            boolean started = fetch == null;
            List<CompletableFuture<Void>> before = new ArrayList<>();
            if (started) {
                for (Fetch other : fetching.values()) {
                    if (other.sharesCopiesWith(copy)) {
                        before.add(other.finished);
                    }
                }
                fetch = new Fetch(key, copy, shardCount);
                fetching.put(key, fetch);
            }
            fetch.markers.addAll(markers);
            Waiter w = new Waiter(fetch);
            fetch.waiters.add(w);
            if (started) {
                // Once it is there to be found, with its first waiter: a download that failed at
                // once may finish here, under this lock.
                Fetch f = fetch;
                f.settled.thenRunAsync(() -> finishFetch(f), finishOn);
                if (before.isEmpty()) {
                    start(f);
                } else {
                    CompletableFuture.allOf(before.toArray(CompletableFuture[]::new))
                            .thenRunAsync(
                                    () -> {
                                        synchronized (fetchLock) {
                                            start(f);
                                        }
                                    },
                                    finishOn);
                }
            }
            return w;
        }
    }

    /** Starts the download, linking what cuts on this node hold; not if it was stopped before. */
    @GuardedBy("fetchLock")
    private void start(Fetch fetch) {
        if (fetch.notStarted == null) {
            try {
                fetch.dir = engine.tmpDir().resolve(FETCH_DIR_PREFIX + UUID.randomUUID());
                fetch.linked = localCopies(fetch.key.table(), fetch.copy);
                CutCopy copy = fetch.copy;
                fetch.transfer =
                        transfers.download(
                                new DownloadRequest(
                                        copy.files(),
                                        copy.metadataPack(),
                                        fetch.dir,
                                        fetch.linked.files()));
                fetch.transfer.settled().thenRun(() -> fetch.settled.complete(null));
                return;
            } catch (RuntimeException e) {
                fetch.notStarted =
                        KvServerException.storage(
                                "cannot start the download of durable cut " + fetch.key.durableId(),
                                e);
            }
        }
        fetch.settled.complete(null);
    }

    /**
     * The files of {@code copy} that a cut of {@code table} on this node holds (its record of
     * copies names the same copy: same path, size and CRC32C), each cut retained.
     */
    @GuardedBy("fetchLock")
    private LocalCopies localCopies(String table, CutCopy copy) {
        TableStore source = engine.tableIfExists(table);
        if (source == null) {
            return LocalCopies.NONE;
        }
        Map<RemoteFile, String> wanted = new HashMap<>();
        copy.files().forEach(f -> wanted.put(f.remote(), f.fileName()));
        Map<String, Path> files = new HashMap<>();
        List<Long> cutIds = new ArrayList<>();
        SnapshotCatalog catalog = source.catalog();
        for (long cutId : catalog.cutIds()) {
            if (files.size() == wanted.size() || !catalog.retain(cutId)) {
                continue;
            }
            boolean used = false;
            Path dir = catalog.cutDir(cutId);
            try {
                Optional<FileOrigins> origins = FileOrigins.readFrom(dir);
                if (origins.isPresent()) {
                    for (Map.Entry<String, List<RemoteFile>> e :
                            origins.get().copiesByFileName().entrySet()) {
                        for (RemoteFile remote : e.getValue()) {
                            String name = wanted.get(remote);
                            if (name != null
                                    && files.putIfAbsent(name, dir.resolve(e.getKey())) == null) {
                                used = true;
                            }
                        }
                    }
                }
            } catch (IOException e) {
                LOG.debug("No copies of cut {} of '{}' to link: {}", cutId, table, e.toString());
            } finally {
                if (!used) {
                    catalog.release(cutId);
                }
            }
            if (used) {
                cutIds.add(cutId);
            }
        }
        return new LocalCopies(source, files, cutIds);
    }

    /** A restore no longer waits (cancelled, or failed elsewhere); the last one stops the fetch. */
    private void leave(Waiter w) {
        Fetch fetch = w.fetch;
        if (fetch == null) {
            return;
        }
        Transfer<DownloadResult> running = null;
        synchronized (fetchLock) {
            boolean stop =
                    fetch.waiters.remove(w)
                            && fetch.waiters.isEmpty()
                            && fetching.get(fetch.key) == fetch;
            if (stop && fetch.transfer == null && fetch.notStarted == null) {
                fetch.notStarted = cancelled();
            } else if (stop) {
                running = fetch.transfer;
            }
        }
        w.bytes.completeExceptionally(cancelled());
        if (running != null) {
            running.cancel();
        }
    }

    private static KvServerException cancelled() {
        return new KvServerException(ErrorCode.SHUTTING_DOWN, "the restore was cancelled");
    }

    /**
     * Once the download settled: the cut becomes a snapshot of its table, or every waiter fails.
     */
    private void finishFetch(Fetch fetch) {
        try {
            finishFetchOnce(fetch);
        } finally {
            synchronized (fetchLock) {
                // Linked into the installed cut by now, or not needed any more.
                fetch.linked.release();
            }
            fetch.finished.complete(null);
        }
    }

    private void finishFetchOnce(Fetch fetch) {
        List<Waiter> waiters;
        long downloaded = 0;
        KvServerException failure = null;
        synchronized (fetchLock) {
            fetching.remove(fetch.key);
            waiters = new ArrayList<>(fetch.waiters);
            if (fetch.transfer == null) {
                failure = fetch.notStarted;
            } else {
                try {
                    DownloadResult result = fetch.transfer.result().join();
                    downloaded = result.downloadedBytes();
                    TableStore source = sourceTable(fetch.key.table(), fetch.shardCount);
                    long cutId = install(source, fetch);
                    try {
                        register(source, cutId, fetch.markers);
                    } finally {
                        source.catalog().release(cutId);
                    }
                } catch (CompletionException e) {
                    failure =
                            DurableSnapshots.failed(
                                    "restore from durable cut " + fetch.key.durableId(),
                                    (TransferFailedException) e.getCause());
                } catch (IOException | RuntimeException e) {
                    failure =
                            e instanceof KvServerException k
                                    ? k
                                    : KvServerException.storage(
                                            "cannot install durable cut "
                                                    + fetch.key.durableId()
                                                    + " into table '"
                                                    + fetch.key.table()
                                                    + "'",
                                            e);
                }
            }
        }
        if (failure != null) {
            if (fetch.dir != null) {
                deleteQuietly(fetch.dir);
            }
            for (Waiter w : waiters) {
                w.bytes.completeExceptionally(failure);
            }
            return;
        }
        for (int i = 0; i < waiters.size(); i++) {
            waiters.get(i).bytes.complete(i == 0 ? downloaded : 0L);
        }
    }

    /** The source table, created here with the restore's shard count if this node lacks it. */
    private TableStore sourceTable(String name, int shardCount) {
        TableStore source = engine.tableIfExists(name);
        if (source != null) {
            return source;
        }
        engine.createTable(name, shardCount, true);
        LOG.info(
                "Created table '{}' ({} shards) for a cut fetched from checkpoint storage",
                name,
                shardCount);
        return engine.tableStore(name);
    }

    /**
     * Gives the downloaded directory the records of a cut of {@code source} and renames it into the
     * table's cuts; returns its id, with a transient reference for the caller.
     */
    @GuardedBy("fetchLock")
    private static long install(TableStore source, Fetch fetch) throws IOException {
        SnapshotCatalog catalog = source.catalog();
        long cutId = catalog.newCutId();
        long size = 0;
        List<Path> files = DurableFiles.listFiles(fetch.dir);
        for (Path f : files) {
            size += Files.size(f);
        }
        String lineage = UUID.randomUUID().toString();
        // No filter holders: a fetched cut has no filters (see the class doc).
        StoreCut cut =
                new StoreCut(
                        cutId,
                        -1,
                        System.currentTimeMillis(),
                        size,
                        files.size(),
                        List.of(),
                        lineage);
        DurableFiles.writeAtomically(fetch.dir.resolve(StoreCut.FILE_NAME), cut.toBytes());
        DurableCutRecord.write(fetch.dir, fetch.key.durableId());
        FileOrigins.of(lineage, fetch.copy.files()).writeTo(fetch.dir);
        DurableFiles.fsync(fetch.dir);
        DurableFiles.moveAtomically(fetch.dir, catalog.cutDir(cutId));
        catalog.addDownloadedCut(cut, fetch.key.durableId());
        return cutId;
    }

    /** Records the cut as each (shard, snapshot id)'s snapshot, durably. */
    private static void register(TableStore source, long cutId, List<long[]> markers) {
        List<SnapshotCatalog.Marker> list = new ArrayList<>(markers.size());
        for (long[] m : markers) {
            list.add(new SnapshotCatalog.Marker((int) m[0], m[1], false, cutId, false));
        }
        source.catalog().record(list);
        Map<Long, BitSet> byId = new HashMap<>();
        for (long[] m : markers) {
            byId.computeIfAbsent(m[1], id -> new BitSet()).set((int) m[0]);
        }
        // Fetched from checkpoint storage: a local copy of a durable snapshot, as if uploaded.
        byId.forEach(source.catalog()::markUploaded);
    }

    private static void deleteQuietly(Path dir) {
        try {
            DurableFiles.deleteTree(dir);
        } catch (IOException e) {
            LOG.warn("Could not delete {}: {}", dir, e.toString());
        }
    }
}
