package io.taishan.snapshot;

import io.taishan.kv.client.KvStore;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Releases the remote shard snapshots that no checkpoint needs any more, from Flink's best-effort
 * checkpoint notifications.
 *
 * <p>Flink deletes only the manifest of a subsumed checkpoint; the shard snapshots it references
 * are ours to drop. The drop is a watermark ("every unpinned snapshot of the table below W"), so a
 * lost notification is repaired by the next one. W only ever moves to one past a <em>subsumed</em>
 * checkpoint: the JobManager subsumes a checkpoint only once a later one completed and the
 * retention count allows it, so neither the latest completed checkpoint nor a retained one is
 * dropped. An aborted checkpoint drops its own snapshots (of this subtask's shards) and nothing
 * else. Native savepoints are pinned, which the watermark spares.
 */
public final class RemoteSnapshotReleaser {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteSnapshotReleaser.class);

    private final KvStore store;
    private final String table;
    private final Supplier<List<Integer>> ownedShards;
    private final Executor executor;

    /** The highest watermark sent; only the task thread touches it. */
    private long watermark = Long.MIN_VALUE;

    public RemoteSnapshotReleaser(
            KvStore store, String table, Supplier<List<Integer>> ownedShards, Executor executor) {
        this.store = store;
        this.table = table;
        this.ownedShards = ownedShards;
        this.executor = executor;
    }

    /** Completes once the drop was sent (or failed, which is logged and repaired later). */
    public CompletableFuture<Void> onCheckpointSubsumed(long checkpointId) {
        long newWatermark = checkpointId + 1;
        if (newWatermark <= watermark) {
            return CompletableFuture.completedFuture(null);
        }
        watermark = newWatermark;
        return CompletableFuture.runAsync(
                () -> {
                    try {
                        int dropped = store.dropSnapshotsBelow(table, newWatermark);
                        LOG.debug(
                                "Dropped {} snapshots of table {} below {}",
                                dropped,
                                table,
                                newWatermark);
                    } catch (RuntimeException e) {
                        // The next subsumed checkpoint raises the watermark again and repairs it.
                        LOG.warn(
                                "Could not drop snapshots of table {} below {}",
                                table,
                                newWatermark,
                                e);
                    }
                },
                executor);
    }

    /** Completes once the drops were sent (or failed, which is logged). */
    public CompletableFuture<Void> onCheckpointAborted(long checkpointId) {
        List<Integer> shards = ownedShards.get();
        return CompletableFuture.runAsync(
                () -> {
                    try {
                        for (int shard : shards) {
                            store.dropSnapshot(table, shard, checkpointId);
                        }
                    } catch (RuntimeException e) {
                        LOG.warn(
                                "Could not drop snapshots of aborted checkpoint {} of table {}",
                                checkpointId,
                                table,
                                e);
                    }
                },
                executor);
    }

    /** The watermark sent last, {@link Long#MIN_VALUE} before the first. */
    public long watermark() {
        return watermark;
    }
}
