package io.taishan.kv.server.storage;

import io.taishan.kv.server.durable.CutTransfers;
import io.taishan.kv.server.durable.FileIdentity;
import io.taishan.kv.server.durable.FileOrigins;
import io.taishan.kv.server.durable.RemoteFile;
import io.taishan.kv.server.durable.Transfer;
import io.taishan.kv.server.durable.TransferFailedException;
import io.taishan.kv.server.durable.UploadRequest;
import io.taishan.kv.server.durable.UploadResult;
import io.taishan.kv.server.storage.DurableSnapshots.UploadedSnapshot;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One UploadSnapshot: the cuts holding a snapshot of the named shards, each held by a reference
 * while its files go up through {@link CutTransfers}, what each may reuse, and the end of the call:
 * each cut's copies recorded beside it, or, when one cut failed, every object of the call deleted.
 * The rules are {@link DurableSnapshots}'s doc.
 */
final class SnapshotUpload {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotUpload.class);

    /** Files of a cut that are the server's own records, never uploaded. */
    private static final String OWN_FILE_PREFIX = "TAISHAN-";

    private final CutTransfers transfers;

    SnapshotUpload(CutTransfers transfers) {
        this.transfers = transfers;
    }

    /**
     * Starts the upload of the cuts holding snapshot {@code snapshotId} of {@code shards} (each in
     * the table's range, each once). The result completes on {@code finishOn} once every file is
     * durable and each cut's copies are recorded, or fails with a {@link KvServerException}.
     *
     * @throws KvServerException SNAPSHOT_NOT_FOUND naming every missing snapshot
     */
    DurableSnapshots.Call<DurableSnapshots.UploadedSnapshot> start(
            TableStore table,
            long snapshotId,
            int[] shards,
            String sharedDir,
            String exclusiveDir,
            Set<String> reusablePaths,
            Executor finishOn) {
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
            upload.transfer = transfers.upload(upload.request);
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
                        .thenApplyAsync(ignored -> finish(table, snapshotId, uploads), finishOn);
        return new DurableSnapshots.Call<>(result, cancelAll);
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
    private DurableSnapshots.UploadedSnapshot finish(
            TableStore table, long snapshotId, List<CutUpload> uploads) {
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
                done.forEach(transfers::discard);
                throw DurableSnapshots.failed(
                        "UploadSnapshot of table '" + table.name() + "'", failure);
            }
            List<DurableSnapshots.UploadedCut> cuts = new ArrayList<>(uploads.size());
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
                cuts.add(
                        new DurableSnapshots.UploadedCut(
                                upload.durableId, List.copyOf(upload.shards), copies));
                bytes += copies.uploadedBytes();
            }
            BitSet uploaded = new BitSet();
            uploads.forEach(u -> u.shards.forEach(uploaded::set));
            catalog.markUploaded(snapshotId, uploaded);
            // Now that these copies are durable, older local ones are only a cache.
            table.evictLocalSnapshots();
            return new DurableSnapshots.UploadedSnapshot(cuts, bytes);
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
}
