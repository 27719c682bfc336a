package io.taishan.kv.server.storage;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.server.durable.CutFile;
import io.taishan.kv.server.durable.CutTransfers;
import io.taishan.kv.server.durable.RemoteFile;
import io.taishan.kv.server.durable.TransferFailedException;
import io.taishan.kv.server.durable.UploadResult;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import javax.annotation.Nullable;

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
 * fetched it before) is registered without a download. Each copy is read once: a file whose copy a
 * cut of the table on this node already holds is hard-linked from there, and a fetch that shares
 * copies with fetches under way waits for them (one checkpoint's shards of a store may name several
 * cuts of it, which share most of their files).
 *
 * <p>Crash safety: nothing a fetch writes is visible before its last step. A crash leaves a
 * download in {@code tmp/} (emptied at start), or a cut that no snapshot references (deleted by the
 * catalog's recovery); the snapshot record is written, durably, last.
 */
public final class DurableSnapshots {
    private final StorageEngine engine;
    @Nullable private final CutTransfers transfers;
    @Nullable private final CutFetches fetches;
    private final String node;

    /**
     * @param transfers the node's transfers; null when {@code durable.enabled} is off
     * @param node this node, as failures name it
     */
    public DurableSnapshots(StorageEngine engine, @Nullable CutTransfers transfers, String node) {
        this.engine = engine;
        this.transfers = transfers;
        this.fetches = transfers == null ? null : new CutFetches(engine, transfers);
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
        return name != null && name.toString().startsWith(CutFetches.FETCH_DIR_PREFIX);
    }

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
        if (transfers == null) {
            throw new KvServerException(
                    ErrorCode.DURABLE_DISABLED,
                    "UploadSnapshot of snapshot "
                            + snapshotId
                            + " of table '"
                            + table.name()
                            + "' needs durable.enabled, which is off on node "
                            + node);
        }
        return new SnapshotUpload(transfers)
                .start(table, snapshotId, shards, sharedDir, exclusiveDir, reusablePaths, finishOn);
    }

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
        Map<CutFetches.FetchKey, List<long[]>> needed = new LinkedHashMap<>();
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
                            new CutFetches.FetchKey(r.sourceTable(), r.durableId()),
                            k -> new ArrayList<>())
                    .add(new long[] {r.shard(), r.snapshotId()});
        }
        if (needed.isEmpty()) {
            return Call.done(0L);
        }
        return fetches.fetch(needed, copies, shardCount, finishOn);
    }

    /** A transfer's failure as the client gets it: the path and the cause, or a shutdown. */
    static KvServerException failed(String what, TransferFailedException e) {
        if (e.reason() == TransferFailedException.Reason.CANCELLED) {
            return new KvServerException(
                    ErrorCode.SHUTTING_DOWN, what + " stopped: " + e.getMessage(), e);
        }
        return new KvServerException(
                ErrorCode.STORAGE_ERROR, what + " failed: " + e.getMessage(), e);
    }
}
