package io.taishan.snapshot;

import io.taishan.kv.client.KvStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 *
 * <p>Notifications stop when a task is cancelled or fails, so the release also happens at close: a
 * checkpoint (or savepoint) whose handle this subtask never returned cannot be complete at the
 * JobManager, which needs every subtask's handle, so its snapshots are dropped. One whose handle
 * was returned may be complete, its notification still on the way, and stays: the next run's
 * subsumptions or the operator's garbage collection release it. Whether a handle is returned or the
 * close drops its snapshots is decided once, by whoever takes the id first.
 */
public final class RemoteSnapshotReleaser {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteSnapshotReleaser.class);

    private final KvStore store;
    private final String table;
    private final Supplier<List<Integer>> ownedShards;
    private final Executor executor;

    /**
     * A close waits this long for the write that may still carry a marker of a dropped checkpoint;
     * a marker applied after its drop leaves a snapshot behind, nothing worse.
     */
    private static final Duration IN_FLIGHT_WRITE_WAIT = Duration.ofSeconds(2);

    /** The highest watermark sent; only the task thread touches it. */
    private long watermark = Long.MIN_VALUE;

    /** Snapshots cut whose handle is not returned yet: the task thread adds, any thread takes. */
    private final Set<Long> unreturned = ConcurrentHashMap.newKeySet();

    private volatile boolean closed;

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
                        store.dropSnapshot(table, toArray(shards), checkpointId);
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

    /** A snapshot's markers were queued: until its handle is returned, a close drops it. */
    public void snapshotCut(long snapshotId) {
        unreturned.add(snapshotId);
    }

    /**
     * The asynchronous phase is about to return the handle of {@code snapshotId}; false if the
     * close took it first and drops its snapshots, so no handle may be returned.
     */
    public boolean handleReturned(long snapshotId) {
        return unreturned.remove(snapshotId) && !closed;
    }

    /**
     * Drops, off the calling thread, the snapshots of this subtask's shards of every snapshot whose
     * handle was never returned, once {@code lastWrite} (the write queue's last write, the queue
     * closed) has finished. Completes once the drops were sent (or failed, which is logged).
     */
    public CompletableFuture<Void> close(CompletableFuture<Void> lastWrite) {
        closed = true;
        List<Long> abandoned = new ArrayList<>();
        for (Long id : unreturned) {
            if (unreturned.remove(id)) {
                abandoned.add(id);
            }
        }
        if (abandoned.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        List<Integer> shards = ownedShards.get();
        return CompletableFuture.runAsync(
                () -> {
                    try {
                        lastWrite.get(IN_FLIGHT_WRITE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    } catch (TimeoutException e) {
                        LOG.warn(
                                "The last write to table {} still runs after {}; dropping the"
                                        + " snapshots of unfinished checkpoints {} anyway",
                                table,
                                IN_FLIGHT_WRITE_WAIT,
                                abandoned);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } catch (Exception e) {
                        // It failed: nothing of it was applied after this point either.
                    }
                    for (long id : abandoned) {
                        try {
                            store.dropSnapshot(table, toArray(shards), id);
                        } catch (RuntimeException e) {
                            LOG.warn(
                                    "Could not drop snapshots of unfinished checkpoint {} of"
                                            + " table {}; the operator's garbage collection finds"
                                            + " them",
                                    id,
                                    table,
                                    e);
                        }
                    }
                    LOG.info(
                            "Dropped the snapshots of table {} of checkpoints {}, unfinished at"
                                    + " close",
                            table,
                            abandoned);
                },
                executor);
    }

    /** The watermark sent last, {@link Long#MIN_VALUE} before the first. */
    public long watermark() {
        return watermark;
    }

    private static int[] toArray(List<Integer> shards) {
        return shards.stream().mapToInt(Integer::intValue).toArray();
    }
}
