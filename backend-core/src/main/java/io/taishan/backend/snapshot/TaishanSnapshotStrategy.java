package io.taishan.backend.snapshot;

import io.taishan.backend.state.RegisteredStates;
import io.taishan.backend.write.WriteBatchQueue;
import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableFile;
import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.DurableUploadFailedException;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.snapshot.DurableCheckpointHandles;
import io.taishan.snapshot.RemoteSnapshotReleaser;
import io.taishan.snapshot.ShardSnapshotRef;
import io.taishan.snapshot.TaishanManifest;
import java.io.IOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import javax.annotation.Nonnull;
import javax.annotation.Nullable;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.EntropyInjector;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SnapshotType.SharingFilesStrategy;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResources;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategy;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageLocation;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A checkpoint (or native savepoint) of the Taishan keyed backend.
 *
 * <p>Synchronous phase: a snapshot marker per owned shard goes into the write queue, behind every
 * write made before the barrier and ahead of every write after it, and is sent without waiting; the
 * state meta info is captured. Asynchronous phase: wait for every shard to acknowledge its durable
 * snapshot, then write the {@link TaishanManifest} through Flink's checkpoint storage and return a
 * plain {@link KeyGroupsStateHandle} on it. Native savepoints pin their snapshots.
 *
 * <p>Durable checkpoints ({@code taishan.checkpoint.durable}) on a file-system checkpoint storage:
 * once every shard acknowledged, the kv-server nodes copy the cuts holding the snapshots into the
 * job's checkpoint storage ({@link KvStore.Durable#uploadSnapshot}: data files under {@code
 * shared/}, reusing the copies of the last confirmed checkpoint by {@link ReusableCopies}' rule;
 * metadata packs under the checkpoint's own directory), and the handle is Flink's {@link
 * IncrementalRemoteKeyedStateHandle} on those copies with the manifest as its meta state ({@link
 * DurableCheckpointHandles}), so the JobManager's {@code SharedStateRegistry} owns and deletes
 * them. A native savepoint copies everything into its own directory and reuses nothing, so it is
 * self-contained; a full checkpoint (the first after a NO_CLAIM restore) reuses nothing either. Any
 * other checkpoint storage (the JobManager's) has no directory to copy into: the checkpoint is then
 * today's, local to the nodes.
 */
public final class TaishanSnapshotStrategy<K>
        implements SnapshotStrategy<KeyedStateHandle, TaishanSnapshotStrategy.Resources> {
    private static final Logger LOG = LoggerFactory.getLogger(TaishanSnapshotStrategy.class);

    private final KvStore store;
    private final String table;
    private final WriteBatchQueue queue;
    private final List<ShardLease> leases;
    private final RegisteredStates registered;
    private final TypeSerializer<K> keySerializer;
    private final KeyGroupRange range;
    private final BackendMetrics metrics;
    private final SnapshotIds ids;
    private final RemoteSnapshotReleaser releaser;
    private final boolean pinned;
    private final UUID backendId;
    @Nullable private final ReusableCopies durable;
    private boolean warnedNotDurable;

    /**
     * @param ids shared by a backend's checkpoint and savepoint strategies
     * @param releaser told of every snapshot cut and every handle returned
     * @param pinned a native savepoint's snapshots are pinned: no watermark drops them
     * @param backendId names the backend in its durable handles, as Flink's RocksDB backend's UID
     * @param durable the copies reusable by durable checkpoints (shared by a backend's strategies);
     *     null: durable checkpoints are off
     */
    public TaishanSnapshotStrategy(
            KvStore store,
            String table,
            WriteBatchQueue queue,
            List<ShardLease> leases,
            RegisteredStates registered,
            TypeSerializer<K> keySerializer,
            KeyGroupRange range,
            BackendMetrics metrics,
            SnapshotIds ids,
            RemoteSnapshotReleaser releaser,
            boolean pinned,
            UUID backendId,
            @Nullable ReusableCopies durable) {
        this.store = store;
        this.table = table;
        this.queue = queue;
        this.leases = leases;
        this.registered = registered;
        this.keySerializer = keySerializer;
        this.range = range;
        this.metrics = metrics;
        this.ids = ids;
        this.releaser = releaser;
        this.pinned = pinned;
        this.backendId = backendId;
        this.durable = durable;
    }

    public String getDescription() {
        return "Taishan " + (pinned ? "native savepoint" : "checkpoint") + " of table " + table;
    }

    /**
     * The synchronous phase: the meta info of every state, and a marker for the snapshot in every
     * owned shard's write stream. Nothing is waited for.
     */
    @Override
    public Resources syncPrepareResources(long checkpointId) {
        if (registered.isEmpty()) {
            return Resources.EMPTY;
        }
        queue.checkHealthy();
        if (!ids.isNew(checkpointId)) {
            // Flink never reuses a checkpoint id in a job, but tests do; the store keeps a pinned
            // snapshot of an id, so drop ours before cutting it again.
            queue.flushAndWait();
            int[] shards = new int[leases.size()];
            for (int i = 0; i < shards.length; i++) {
                shards[i] = leases.get(i).shard();
            }
            store.dropSnapshot(table, shards, checkpointId);
        }
        CompletableFuture<List<SnapshotInfo>> acknowledged =
                queue.snapshotMarkers(leases, checkpointId, pinned);
        releaser.snapshotCut(checkpointId);
        return new Resources(registered.metaInfoSnapshots(), acknowledged, System.nanoTime());
    }

    @Override
    public SnapshotResultSupplier<KeyedStateHandle> asyncSnapshot(
            Resources resources,
            long checkpointId,
            long timestamp,
            @Nonnull CheckpointStreamFactory streamFactory,
            @Nonnull CheckpointOptions checkpointOptions) {
        if (resources.acknowledged == null) {
            return registry -> SnapshotResult.empty();
        }
        SharingFilesStrategy sharing =
                checkpointOptions.getCheckpointType().getSharingFilesStrategy();
        FsCheckpointStorageLocation location = durableLocation(streamFactory);
        // On the task thread, as RocksDB takes its PreviousSnapshot: the base is the checkpoint
        // confirmed before this one started.
        Set<String> reusable = location == null ? null : durable.reusableFor(sharing);
        return registry -> {
            DurableTarget target =
                    location == null ? null : DurableTarget.of(location, sharing, reusable);
            List<SnapshotInfo> taken = await(resources.acknowledged);
            metrics.snapshotAcknowledged(resources.millisSinceStart());
            Set<Integer> shards = new HashSet<>();
            for (SnapshotInfo info : taken) {
                if (info.snapshotId() == checkpointId && info.table().equals(table)) {
                    if (info.pinned() != pinned) {
                        // The store returns an existing snapshot of the same id as is.
                        throw new IllegalStateException(
                                "shard "
                                        + info.shard()
                                        + " of table "
                                        + table
                                        + " already holds a "
                                        + (info.pinned() ? "pinned" : "unpinned")
                                        + " snapshot "
                                        + checkpointId
                                        + " from an earlier run under the same JobID; drop it"
                                        + " on the kv-server");
                    }
                    shards.add(info.shard());
                }
            }
            for (int keyGroup : range) {
                if (!shards.contains(keyGroup)) {
                    throw new IllegalStateException(
                            "the store acknowledged no snapshot "
                                    + checkpointId
                                    + " of shard "
                                    + keyGroup
                                    + " of table "
                                    + table);
                }
            }
            KeyedBackendSerializationProxy<K> metaInfo =
                    new KeyedBackendSerializationProxy<>(keySerializer, resources.metaInfo, false);
            DurableCheckpoint durableCheckpoint =
                    target == null
                            ? null
                            : durableHandle(
                                    checkpointId, streamFactory, registry, metaInfo, target);
            KeyedStateHandle handle =
                    durableCheckpoint != null
                            ? durableCheckpoint.handle
                            : TaishanManifest.write(
                                    streamFactory.createCheckpointStateOutputStream(
                                            CheckpointedStateScope.EXCLUSIVE),
                                    registry,
                                    metaInfo,
                                    range,
                                    keyGroup ->
                                            new ShardSnapshotRef(table, keyGroup, checkpointId));
            if (!releaser.handleReturned(checkpointId)) {
                if (target != null) {
                    // Deletes what this checkpoint wrote; reused copies are placeholders.
                    discardQuietly(handle, checkpointId);
                }
                throw new IllegalStateException(
                        "the backend of table "
                                + table
                                + " was disposed during checkpoint "
                                + checkpointId
                                + "; its snapshots are dropped");
            }
            if (durableCheckpoint != null) {
                durable.referenced(checkpointId, target.sharing, durableCheckpoint.copies);
            }
            metrics.snapshotCompleted(resources.millisSinceStart());
            return SnapshotResult.of(handle);
        };
    }

    /**
     * The file-system location a durable checkpoint's copies go to, or null for one that is not
     * durable: durable checkpoints off, or a checkpoint storage that is not a file system.
     */
    @Nullable
    private FsCheckpointStorageLocation durableLocation(CheckpointStreamFactory streamFactory) {
        if (durable == null) {
            return null;
        }
        if (streamFactory instanceof FsCheckpointStorageLocation location) {
            return location;
        }
        if (!warnedNotDurable) {
            warnedNotDurable = true;
            LOG.warn(
                    "taishan.checkpoint.durable is on, but the checkpoint storage of table {} is"
                            + " not a file system ({}): its checkpoints stay on the kv-server"
                            + " nodes only. Set execution.checkpointing.dir.",
                    table,
                    streamFactory.getClass().getName());
        }
        return null;
    }

    /**
     * The nodes write a copy under the directory's path as given, where Flink's own streams would
     * have replaced an entropy marker (s3.entropy.key) by random characters; the marker is dropped
     * rather than written literally into every object's name.
     */
    private static Path withoutEntropyMarker(Path dir) throws IOException {
        return EntropyInjector.removeEntropyMarkerIfPresent(dir.getFileSystem(), dir);
    }

    /**
     * Copies the cuts holding checkpoint {@code checkpointId}'s snapshots into checkpoint storage,
     * writes the manifest naming them, and returns the handle. Whatever this checkpoint wrote is
     * deleted again if the handle cannot be made.
     */
    private DurableCheckpoint durableHandle(
            long checkpointId,
            CheckpointStreamFactory streamFactory,
            CloseableRegistry registry,
            KeyedBackendSerializationProxy<K> metaInfo,
            DurableTarget target)
            throws IOException {
        KvStore.Durable facet =
                store.durable()
                        .orElseThrow(
                                () ->
                                        new IllegalStateException(
                                                "taishan.checkpoint.durable is on, but the"
                                                        + " kv-server client of table "
                                                        + table
                                                        + " cannot copy snapshots into"
                                                        + " checkpoint storage"));
        int[] shards = new int[range.getNumberOfKeyGroups()];
        for (int i = 0; i < shards.length; i++) {
            shards[i] = range.getStartKeyGroup() + i;
        }
        long start = System.nanoTime();
        DurableSnapshot uploaded;
        try {
            uploaded =
                    facet.uploadSnapshot(
                            table,
                            checkpointId,
                            shards,
                            target.sharedDir,
                            target.exclusiveDir,
                            target.reusable);
        } catch (KvException e) {
            if (e instanceof DurableUploadFailedException partial) {
                // Nodes that finished wrote copies no checkpoint will reference.
                discardCopies(partial.uploaded(), target, checkpointId);
            }
            throw new IOException(
                    "The kv-server could not copy checkpoint "
                            + checkpointId
                            + " of table "
                            + table
                            + " (key groups "
                            + range
                            + ") into "
                            + target.sharedDir
                            + (e.code() == ErrorCode.DURABLE_DISABLED
                                    ? ": durable.enabled is off on the node, while"
                                            + " taishan.checkpoint.durable is on"
                                    : "")
                            + ": "
                            + e.getMessage(),
                    e);
        }
        long uploadMillis = (System.nanoTime() - start) / 1_000_000;
        IncrementalRemoteKeyedStateHandle handle = null;
        try {
            Map<Integer, String> cutOf = new HashMap<>();
            for (DurableCut cut : uploaded.cuts()) {
                for (int shard : cut.shards()) {
                    cutOf.put(shard, cut.cutId());
                }
            }
            StreamStateHandle manifest =
                    TaishanManifest.writeDurable(
                            streamFactory.createCheckpointStateOutputStream(
                                    CheckpointedStateScope.EXCLUSIVE),
                            registry,
                            metaInfo,
                            range,
                            keyGroup -> new ShardSnapshotRef(table, keyGroup, checkpointId),
                            cutOf::get,
                            uploaded.cuts());
            handle =
                    DurableCheckpointHandles.handle(
                            backendId,
                            range,
                            checkpointId,
                            uploaded.cuts(),
                            target.reusable,
                            target.exclusiveDir,
                            manifest,
                            uploaded.uploadedBytes() + manifest.getStateSize());
        } finally {
            if (handle == null) {
                discardCopies(uploaded.cuts(), target, checkpointId);
            }
        }
        long reusedFiles = 0;
        long reusedBytes = 0;
        Set<String> copies = new HashSet<>();
        for (DurableCut cut : uploaded.cuts()) {
            for (DurableFile file : cut.files()) {
                copies.add(file.path());
                if (target.reusable.contains(file.path())) {
                    reusedFiles++;
                    reusedBytes += file.sizeBytes();
                }
            }
        }
        metrics.durableUploaded(
                uploadMillis,
                uploaded.uploadedBytes(),
                copies.size() - reusedFiles,
                reusedFiles,
                reusedBytes);
        return new DurableCheckpoint(handle, copies);
    }

    /** A durable checkpoint's handle, and the data files' copies it references. */
    private record DurableCheckpoint(
            IncrementalRemoteKeyedStateHandle handle, Set<String> copies) {}

    private static List<SnapshotInfo> await(CompletableFuture<List<SnapshotInfo>> acknowledged)
            throws Exception {
        try {
            return acknowledged.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) {
                throw (Exception) cause;
            }
            throw e;
        }
    }

    /** Deletes the copies of {@code cuts} this checkpoint wrote, never a reused one. */
    private void discardCopies(List<DurableCut> cuts, DurableTarget target, long checkpointId) {
        // No handle to discard: one on the copies alone does it.
        discardQuietly(
                DurableCheckpointHandles.handle(
                        backendId,
                        range,
                        checkpointId,
                        cuts,
                        target.reusable,
                        target.exclusiveDir,
                        new ByteStreamStateHandle("none", new byte[0]),
                        0),
                checkpointId);
    }

    private void discardQuietly(KeyedStateHandle handle, long checkpointId) {
        try {
            handle.discardState();
        } catch (Exception e) {
            // Unreferenced files under random names, as a TaskManager that died mid-checkpoint
            // leaves them.
            LOG.warn(
                    "Could not delete the copies checkpoint {} of table {} wrote",
                    checkpointId,
                    table,
                    e);
        }
    }

    /** Where a durable checkpoint's copies go, and which existing ones it may reference. */
    private record DurableTarget(
            String sharedDir,
            String exclusiveDir,
            SharingFilesStrategy sharing,
            Set<String> reusable) {

        static DurableTarget of(
                FsCheckpointStorageLocation location,
                SharingFilesStrategy sharing,
                Set<String> reusable)
                throws IOException {
            Path exclusive = withoutEntropyMarker(location.getCheckpointDirectory());
            // A native savepoint is not Flink's to delete and must hold everything itself, so its
            // data files go into its own directory, as RocksDB writes them in exclusive scope.
            Path shared =
                    sharing == SharingFilesStrategy.NO_SHARING
                            ? exclusive
                            : withoutEntropyMarker(location.getSharedStateDirectory());
            return new DurableTarget(shared.toString(), exclusive.toString(), sharing, reusable);
        }
    }

    /** What the synchronous phase captured. */
    public static final class Resources implements SnapshotResources {
        static final Resources EMPTY = new Resources(List.of(), null, 0);

        final List<StateMetaInfoSnapshot> metaInfo;
        @Nullable final CompletableFuture<List<SnapshotInfo>> acknowledged;
        final long startNanos;

        Resources(
                List<StateMetaInfoSnapshot> metaInfo,
                @Nullable CompletableFuture<List<SnapshotInfo>> acknowledged,
                long startNanos) {
            this.metaInfo = metaInfo;
            this.acknowledged = acknowledged;
            this.startNanos = startNanos;
        }

        long millisSinceStart() {
            return (System.nanoTime() - startNanos) / 1_000_000;
        }

        @Override
        public void release() {}
    }
}
