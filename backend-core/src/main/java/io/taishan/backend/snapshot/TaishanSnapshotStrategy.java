package io.taishan.backend.snapshot;

import io.taishan.backend.state.RegisteredStates;
import io.taishan.backend.write.WriteBatchQueue;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.snapshot.RemoteSnapshotReleaser;
import io.taishan.snapshot.ShardSnapshotRef;
import io.taishan.snapshot.TaishanManifest;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import javax.annotation.Nonnull;
import javax.annotation.Nullable;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResources;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategy;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

/**
 * A checkpoint (or native savepoint) of the Taishan keyed backend.
 *
 * <p>Synchronous phase: a snapshot marker per owned shard goes into the write queue, behind every
 * write made before the barrier and ahead of every write after it, and is sent without waiting; the
 * state meta info is captured. Asynchronous phase: wait for every shard to acknowledge its durable
 * snapshot, then write the {@link TaishanManifest} through Flink's checkpoint storage and return a
 * plain {@link KeyGroupsStateHandle} on it. Native savepoints pin their snapshots.
 */
public final class TaishanSnapshotStrategy<K>
        implements SnapshotStrategy<KeyedStateHandle, TaishanSnapshotStrategy.Resources> {

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

    /**
     * @param ids shared by a backend's checkpoint and savepoint strategies
     * @param releaser told of every snapshot cut and every handle returned
     * @param pinned a native savepoint's snapshots are pinned: no watermark drops them
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
            boolean pinned) {
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
        return registry -> {
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
            KeyGroupsStateHandle handle =
                    TaishanManifest.write(
                            streamFactory.createCheckpointStateOutputStream(
                                    CheckpointedStateScope.EXCLUSIVE),
                            registry,
                            metaInfo,
                            range,
                            keyGroup -> new ShardSnapshotRef(table, keyGroup, checkpointId));
            if (!releaser.handleReturned(checkpointId)) {
                throw new IllegalStateException(
                        "the backend of table "
                                + table
                                + " was disposed during checkpoint "
                                + checkpointId
                                + "; its snapshots are dropped");
            }
            metrics.snapshotCompleted(resources.millisSinceStart());
            return SnapshotResult.of(handle);
        };
    }

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
