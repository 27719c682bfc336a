package io.taishan.kv.server.storage;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.server.durable.CutFile;
import io.taishan.kv.server.durable.CutTransfers;
import io.taishan.kv.server.durable.DownloadRequest;
import io.taishan.kv.server.durable.DownloadResult;
import io.taishan.kv.server.durable.FileIdentity;
import io.taishan.kv.server.durable.FileOrigins;
import io.taishan.kv.server.durable.RemoteFile;
import io.taishan.kv.server.durable.Transfer;
import io.taishan.kv.server.durable.TransferFailedException;
import io.taishan.kv.server.durable.UploadRequest;
import io.taishan.kv.server.durable.UploadResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
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
 * Snapshots that outlive the node's disk: the cuts that hold a snapshot, copied into Flink's
 * checkpoint storage by this node ({@link #upload}), and the cuts a restore names, fetched from
 * there when this node does not hold the snapshot ({@link #fetchMissing}). The files move through
 * {@link CutTransfers}; this class decides which cuts and files, what may be reused, and how a
 * fetched cut becomes a snapshot of its table. Knows nothing of gRPC.
 *
 * <h2>Upload</h2>
 *
 * <p>Each cut holding the snapshot of a named shard is uploaded once per call, whatever the number
 * of its shards, while a reference keeps it from being deleted. A cut gets its durable id at its
 * first upload ({@link DurableCutRecord}); later uploads report the same id. Its data files are
 * identified by (lineage, name, size) ({@link StoreCut#lineage}): an upload may reference the copy
 * of a file that any cut of the same lineage, or the store it forked from, recorded beside it, when
 * the caller allows that copy's path (Flink's rule: only copies of the last confirmed checkpoint).
 * After a call that succeeded, each cut records where its files' copies are now, for the next call
 * and for the forks of a restore. A call that fails deletes every object it wrote, those of its
 * cuts whose upload had succeeded too: nothing of it was reported.
 *
 * <p>What goes up: the cut's RocksDB files (data files as objects of their own, the others in one
 * metadata pack), not the server's records ({@code TAISHAN-*}): a fetched cut gets records of its
 * own. Nor its Bloom filters ({@code TAISHAN-CUT-FILTERS}): a cut's filter index may point at the
 * bundles of older cuts, which would have to be uploaded with it on every checkpoint (a bundle is
 * about 2.5 bytes per key, rewritten for every shard that changed) for the sake of a restore after
 * a lost disk, which is rare; a fetched cut has no filters, so a restore from it rebuilds the
 * filters of its shards with keys (a scan within {@code filter.rebuild-bytes-per-second}) while the
 * shards serve reads from the store meanwhile.
 *
 * <h2>Fetch</h2>
 *
 * <p>A restore whose node holds the snapshot never downloads anything. Otherwise the cut the
 * restore names is downloaded once per node, however many restores wait for it at once, into {@code
 * tmp/} (verified file by file, appearing whole or not at all), given a cut record of its own (a
 * new lineage, no filters), its durable id and the record of its copies, renamed into the source
 * table's cuts (the table is created if this node lacks it, with the restore's shard count), and
 * registered as snapshot {@code snapshot_id} of the shards that name it; then the restore forks
 * from it as from any cut. A cut this node already has under that durable id (it uploaded or
 * fetched it before) is registered without a download.
 *
 * <p>Crash safety: nothing a fetch writes is visible before its last step. A crash leaves a
 * download in {@code tmp/} (emptied at start), or a cut that no snapshot references (deleted by the
 * catalog's recovery); the snapshot record is written, durably, last.
 */
public final class DurableSnapshots {
    private static final Logger LOG = LoggerFactory.getLogger(DurableSnapshots.class);

    /** Files of a cut that are the server's own records, never uploaded. */
    private static final String OWN_FILE_PREFIX = "TAISHAN-";

    private static final String FETCH_DIR_PREFIX = "fetch-";

    private final StorageEngine engine;
    @Nullable private final CutTransfers transfers;
    private final String node;

    /** Orders the fetches and the registration of fetched cuts. */
    private final Object fetchLock = new Object();

    @GuardedBy("fetchLock")
    private final Map<FetchKey, Fetch> fetching = new HashMap<>();

    /**
     * @param transfers the node's transfers; null when {@code durable.enabled} is off
     * @param node this node, as failures name it
     */
    public DurableSnapshots(StorageEngine engine, @Nullable CutTransfers transfers, String node) {
        this.engine = engine;
        this.transfers = transfers;
        this.node = node;
    }

    /** A call under way: its outcome, and how to stop it (a stopped call fails). */
    public record Call<T>(CompletableFuture<T> result, Runnable cancel) {
        static <T> Call<T> done(T value) {
            return new Call<>(CompletableFuture.completedFuture(value), () -> {});
        }
    }

    /** A cut of the upload and the shards of the request whose snapshot it holds. */
    public record UploadedCut(String durableId, List<Integer> shards, UploadResult copies) {}

    /** What an upload made durable, and the bytes it wrote (reused copies not counted). */
    public record UploadedSnapshot(List<UploadedCut> cuts, long uploadedBytes) {}

    /** A cut in checkpoint storage as a restore names it. */
    public record CutCopy(String durableId, List<CutFile> files, RemoteFile metadataPack) {}

    /**
     * A shard of a restore that takes snapshot {@code snapshotId} of {@code sourceTable}, held in
     * checkpoint storage by the cut {@code durableId} (empty: it must be on this node).
     */
    public record ShardFetch(int shard, String sourceTable, long snapshotId, String durableId) {}

    /** Whether a directory of {@code tmp/} is a fetched cut not yet moved into its table. */
    static boolean isFetchDir(Path dir) {
        Path name = dir.getFileName();
        return name != null && name.toString().startsWith(FETCH_DIR_PREFIX);
    }

    // ---- upload

    /**
     * Uploads the cuts holding snapshot {@code snapshotId} of {@code shards} (each in the table's
     * range, each once). The result completes on {@code finishOn} once every file is durable and
     * each cut's copies are recorded, or fails with a {@link KvServerException}.
     *
     * @throws KvServerException DURABLE_DISABLED, SNAPSHOT_NOT_FOUND naming every missing snapshot
     */
    public Call<UploadedSnapshot> upload(
            TableStore table,
            long snapshotId,
            int[] shards,
            String sharedDir,
            String exclusiveDir,
            Set<String> reusablePaths,
            Executor finishOn) {
        CutTransfers t =
                requireTransfers(
                        "UploadSnapshot of snapshot "
                                + snapshotId
                                + " of table '"
                                + table.name()
                                + "'");
        SnapshotCatalog catalog = table.catalog();
        Map<Long, CutUpload> byCut = new LinkedHashMap<>();
        List<String> missing = new ArrayList<>();
        for (int shard : shards) {
            StoreCut cut = catalog.retainCutOf(shard, snapshotId);
            if (cut == null) {
                missing.add(
                        "snapshot "
                                + snapshotId
                                + " of table '"
                                + table.name()
                                + "' shard "
                                + shard);
                continue;
            }
            CutUpload upload = byCut.get(cut.id());
            if (upload != null) {
                catalog.release(cut.id()); // one reference per cut is enough
            } else {
                upload = new CutUpload(cut);
                byCut.put(cut.id(), upload);
            }
            upload.shards.add(shard);
        }
        List<CutUpload> uploads = new ArrayList<>(byCut.values());
        try {
            if (!missing.isEmpty()) {
                throw KvServerException.snapshotsNotFound(missing);
            }
            for (CutUpload upload : uploads) {
                upload.request = request(table, upload.cut, sharedDir, exclusiveDir, reusablePaths);
                upload.durableId = catalog.durableId(upload.cut.id());
            }
        } catch (IOException | RuntimeException e) {
            uploads.forEach(u -> catalog.release(u.cut.id()));
            if (e instanceof KvServerException k) {
                throw k;
            }
            throw KvServerException.storage(
                    "UploadSnapshot of table '" + table.name() + "' failed", e);
        }
        for (CutUpload upload : uploads) {
            upload.transfer = t.upload(upload.request);
        }
        Runnable cancelAll = () -> uploads.forEach(u -> u.transfer.cancel());
        // The first failure stops the others at once; the call ends once none moves any more.
        for (CutUpload upload : uploads) {
            upload.transfer
                    .result()
                    .whenComplete(
                            (r, e) -> {
                                if (e != null) {
                                    cancelAll.run();
                                }
                            });
        }
        CompletableFuture<?>[] settled = new CompletableFuture<?>[uploads.size()];
        for (int i = 0; i < settled.length; i++) {
            settled[i] = uploads.get(i).transfer.settled();
        }
        CompletableFuture<UploadedSnapshot> result =
                CompletableFuture.allOf(settled)
                        .thenApplyAsync(ignored -> finishUpload(t, table, uploads), finishOn);
        return new Call<>(result, cancelAll);
    }

    /** One cut of an upload call. */
    private static final class CutUpload {
        final StoreCut cut;
        final List<Integer> shards = new ArrayList<>();
        UploadRequest request;
        String durableId;
        Transfer<UploadResult> transfer;

        CutUpload(StoreCut cut) {
            this.cut = cut;
        }
    }

    /** Once every transfer settled: records the copies and reports them, or undoes the call. */
    private UploadedSnapshot finishUpload(
            CutTransfers t, TableStore table, List<CutUpload> uploads) {
        SnapshotCatalog catalog = table.catalog();
        try {
            TransferFailedException failure = null;
            List<UploadResult> done = new ArrayList<>(uploads.size());
            for (CutUpload upload : uploads) {
                try {
                    done.add(upload.transfer.result().join());
                } catch (CompletionException e) {
                    TransferFailedException f = (TransferFailedException) e.getCause();
                    // The cause, not the cancels it brought about in the other cuts.
                    if (failure == null
                            || (failure.reason() == TransferFailedException.Reason.CANCELLED
                                    && f.reason() != TransferFailedException.Reason.CANCELLED)) {
                        failure = f;
                    }
                }
            }
            if (failure != null) {
                done.forEach(t::discard);
                throw failed("UploadSnapshot of table '" + table.name() + "'", failure);
            }
            List<UploadedCut> cuts = new ArrayList<>(uploads.size());
            long bytes = 0;
            for (int i = 0; i < uploads.size(); i++) {
                CutUpload upload = uploads.get(i);
                UploadResult copies = done.get(i);
                try {
                    catalog.recordCopies(upload.cut.id(), copies.origins());
                } catch (IOException e) {
                    // The copies are durable and reported; only their reuse is lost.
                    LOG.warn(
                            "Could not record the copies of cut {} of {}: its next upload copies"
                                    + " its files again: {}",
                            upload.cut.id(),
                            table,
                            e.toString());
                }
                cuts.add(new UploadedCut(upload.durableId, List.copyOf(upload.shards), copies));
                bytes += copies.uploadedBytes();
            }
            return new UploadedSnapshot(cuts, bytes);
        } finally {
            uploads.forEach(u -> catalog.release(u.cut.id()));
        }
    }

    /** The cut's files (its RocksDB files; see the class doc) and the copies it may reuse. */
    private static UploadRequest request(
            TableStore table,
            StoreCut cut,
            String sharedDir,
            String exclusiveDir,
            Set<String> reusablePaths)
            throws IOException {
        SnapshotCatalog catalog = table.catalog();
        Path dir = catalog.cutDir(cut.id());
        List<String> names = new ArrayList<>();
        for (Path file : DurableFiles.listFiles(dir)) {
            String name = file.getFileName().toString();
            if (!name.startsWith(OWN_FILE_PREFIX) && !name.endsWith(".tmp")) {
                names.add(name);
            }
        }
        String identity = fileIdentityStore(catalog, cut);
        Map<FileIdentity, RemoteFile> reusable = new HashMap<>();
        if (!reusablePaths.isEmpty()) {
            List<Path> recorded = new ArrayList<>();
            if (cut.lineage() == null) {
                recorded.add(dir);
            } else {
                for (long other : catalog.cutsOfLineage(cut.lineage())) {
                    recorded.add(catalog.cutDir(other));
                }
                RangeStore store = table.storeOfLineage(cut.lineage());
                if (store != null) {
                    recorded.add(store.dir());
                }
            }
            for (Path where : recorded) {
                try {
                    Optional<FileOrigins> origins = FileOrigins.readFrom(where);
                    if (origins.isPresent() && origins.get().storeId().equals(identity)) {
                        reusable.putAll(origins.get().reusable(reusablePaths::contains));
                    }
                } catch (IOException e) {
                    // Gone with its cut meanwhile, or corrupt: its copies are not offered.
                    LOG.debug("No reusable copies from {}: {}", where, e.toString());
                }
            }
        }
        return new UploadRequest(identity, dir, names, sharedDir, exclusiveDir, reusable);
    }

    /**
     * The store id of a cut's files for reuse: its lineage; for a cut written before lineages
     * existed, one of its own (its files are then never taken for another cut's).
     */
    private static String fileIdentityStore(SnapshotCatalog catalog, StoreCut cut)
            throws IOException {
        return cut.lineage() != null ? cut.lineage() : "cut-" + catalog.durableId(cut.id());
    }

    // ---- fetch

    /**
     * Makes sure this node holds every snapshot {@code restores} name with a durable cut,
     * downloading the cuts it lacks; the restore itself is the caller's, once the result is there
     * (the bytes this call downloaded). A shard whose snapshot this node holds costs nothing.
     *
     * @param shardCount the shard count of the table restored into, which a source table created
     *     here gets
     * @param copies the durable cuts the restores name, by durable id
     * @throws KvServerException DURABLE_DISABLED when a snapshot must be fetched and this node
     *     cannot; INVALID_ARGUMENT for a durable cut that {@code copies} lacks or a source table
     *     with another shard count
     */
    public Call<Long> fetchMissing(
            int shardCount,
            List<ShardFetch> restores,
            Map<String, CutCopy> copies,
            Executor finishOn) {
        Map<FetchKey, List<long[]>> needed = new LinkedHashMap<>();
        for (ShardFetch r : restores) {
            if (r.durableId().isEmpty()) {
                continue;
            }
            TableStore source = engine.tableIfExists(r.sourceTable());
            if (source != null && source.catalog().cutIdOf(r.shard(), r.snapshotId()) >= 0) {
                continue; // held here: taken from this node's disk
            }
            if (source != null && source.shardCount() != shardCount) {
                throw KvServerException.invalid(
                        "cannot restore from table '"
                                + source.name()
                                + "' ("
                                + source.shardCount()
                                + " shards) into a table of "
                                + shardCount
                                + " shards: shard counts differ");
            }
            if (transfers == null) {
                throw new KvServerException(
                        ErrorCode.DURABLE_DISABLED,
                        "snapshot "
                                + r.snapshotId()
                                + " of table '"
                                + r.sourceTable()
                                + "' shard "
                                + r.shard()
                                + " is not on node "
                                + node
                                + " and must be fetched from checkpoint storage (durable cut "
                                + r.durableId()
                                + "), but durable.enabled is off on it");
            }
            if (!DurableCutRecord.isValid(r.durableId())) {
                throw KvServerException.invalid(
                        "shard " + r.shard() + " names no durable cut id: '" + r.durableId() + "'");
            }
            if (!copies.containsKey(r.durableId())) {
                throw KvServerException.invalid(
                        "shard "
                                + r.shard()
                                + " names durable cut "
                                + r.durableId()
                                + ", which the request's durable cuts lack");
            }
            needed.computeIfAbsent(
                            new FetchKey(r.sourceTable(), r.durableId()), k -> new ArrayList<>())
                    .add(new long[] {r.shard(), r.snapshotId()});
        }
        if (needed.isEmpty()) {
            return Call.done(0L);
        }
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
        return new Call<>(result, leaveAll);
    }

    /** A durable cut of a source table on this node. */
    private record FetchKey(String table, String durableId) {}

    /** One download under way, and the restores waiting for it. */
    private static final class Fetch {
        final FetchKey key;
        final CutCopy copy;
        final int shardCount;

        /** Every (shard, snapshot id) to register once it is there, also of waiters that left. */
        @GuardedBy("fetchLock")
        final List<long[]> markers = new ArrayList<>();

        @GuardedBy("fetchLock")
        final List<Waiter> waiters = new ArrayList<>();

        Transfer<DownloadResult> transfer;
        Path dir;

        Fetch(FetchKey key, CutCopy copy, int shardCount) {
            this.key = key;
            this.copy = copy;
            this.shardCount = shardCount;
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
            if (fetch == null) {
                fetch = start(key, copy, shardCount, finishOn);
                fetching.put(key, fetch);
            }
            fetch.markers.addAll(markers);
            Waiter w = new Waiter(fetch);
            fetch.waiters.add(w);
            return w;
        }
    }

    @GuardedBy("fetchLock")
    private Fetch start(FetchKey key, CutCopy copy, int shardCount, Executor finishOn) {
        Fetch fetch = new Fetch(key, copy, shardCount);
        fetch.dir = engine.tmpDir().resolve(FETCH_DIR_PREFIX + UUID.randomUUID());
        fetch.transfer =
                transfers.download(
                        new DownloadRequest(copy.files(), copy.metadataPack(), fetch.dir));
        Fetch started = fetch;
        fetch.transfer.settled().thenRunAsync(() -> finishFetch(started), finishOn);
        return fetch;
    }

    /** A restore no longer waits (cancelled, or failed elsewhere); the last one stops the fetch. */
    private void leave(Waiter w) {
        Fetch fetch = w.fetch;
        if (fetch == null) {
            return;
        }
        boolean stop;
        synchronized (fetchLock) {
            stop =
                    fetch.waiters.remove(w)
                            && fetch.waiters.isEmpty()
                            && fetching.get(fetch.key) == fetch;
        }
        w.bytes.completeExceptionally(
                new KvServerException(ErrorCode.SHUTTING_DOWN, "the restore was cancelled"));
        if (stop) {
            fetch.transfer.cancel();
        }
    }

    /**
     * Once the download settled: the cut becomes a snapshot of its table, or every waiter fails.
     */
    private void finishFetch(Fetch fetch) {
        List<Waiter> waiters;
        long downloaded = 0;
        KvServerException failure = null;
        synchronized (fetchLock) {
            fetching.remove(fetch.key);
            waiters = new ArrayList<>(fetch.waiters);
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
                        failed(
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
        if (failure != null) {
            deleteQuietly(fetch.dir);
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
    }

    // ---- failures

    private CutTransfers requireTransfers(String what) {
        if (transfers == null) {
            throw new KvServerException(
                    ErrorCode.DURABLE_DISABLED,
                    what + " needs durable.enabled, which is off on node " + node);
        }
        return transfers;
    }

    /** A transfer's failure as the client gets it: the path and the cause, or a shutdown. */
    private static KvServerException failed(String what, TransferFailedException e) {
        if (e.reason() == TransferFailedException.Reason.CANCELLED) {
            return new KvServerException(
                    ErrorCode.SHUTTING_DOWN, what + " stopped: " + e.getMessage(), e);
        }
        return new KvServerException(
                ErrorCode.STORAGE_ERROR, what + " failed: " + e.getMessage(), e);
    }

    private static void deleteQuietly(Path dir) {
        try {
            DurableFiles.deleteTree(dir);
        } catch (IOException e) {
            LOG.warn("Could not delete {}: {}", dir, e.toString());
        }
    }
}
