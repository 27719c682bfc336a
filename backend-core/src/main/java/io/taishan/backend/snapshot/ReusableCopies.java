package io.taishan.backend.snapshot;

import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import javax.annotation.concurrent.GuardedBy;
import org.apache.flink.runtime.checkpoint.SnapshotType.SharingFilesStrategy;

/**
 * Which copies in checkpoint storage a durable checkpoint may reference instead of writing again:
 * Flink's RocksDB backend's rule ({@code RocksIncrementalSnapshotStrategy}'s uploaded files and
 * {@code PreviousSnapshot}), for the same reason. The JobManager deletes the files of a checkpoint
 * it subsumed or aborted once no other registered checkpoint uses them, so only the copies of the
 * last checkpoint it <em>confirmed</em> ({@code notifyCheckpointComplete}) are certain to exist
 * while the next one registers its references. A copy of an unconfirmed checkpoint may be gone.
 *
 * <ul>
 *   <li>Each checkpoint records the copies it references, reused or new (a native savepoint none:
 *       its copies live in its own directory, which Flink does not own).
 *   <li>{@code notifyCheckpointComplete(n)} makes checkpoint {@code n}'s the reusable set and
 *       forgets older ones, but only for a checkpoint recorded here: a savepoint's or another
 *       subtask's id must not reset the base (FLINK-23949).
 *   <li>{@code notifyCheckpointAborted(n)} forgets {@code n}'s.
 *   <li>A full checkpoint ({@code FORWARD}: the first after a NO_CLAIM restore) and a native
 *       savepoint ({@code NO_SHARING}) reuse nothing.
 * </ul>
 *
 * <p>The task thread asks and is notified; the asynchronous phase records. One lock.
 */
public final class ReusableCopies {
    @GuardedBy("this")
    private final SortedMap<Long, Set<String>> referenced = new TreeMap<>();

    @GuardedBy("this")
    private long lastCompleted = -1;

    /**
     * A backend restored from durable checkpoint {@code checkpointId} may reuse its copies, as
     * Flink's RocksDB backend reuses the files it restored: the restored checkpoint is confirmed,
     * and with NO_CLAIM the first checkpoint is a full one anyway.
     */
    public synchronized void restored(long checkpointId, Set<String> copies) {
        referenced.put(checkpointId, Set.copyOf(copies));
        lastCompleted = checkpointId;
    }

    /** The copies a checkpoint of this sharing strategy may reuse. */
    public synchronized Set<String> reusableFor(SharingFilesStrategy strategy) {
        if (strategy != SharingFilesStrategy.FORWARD_BACKWARD) {
            return Set.of();
        }
        Set<String> confirmed = referenced.get(lastCompleted);
        return confirmed == null ? Set.of() : confirmed;
    }

    /** Checkpoint {@code checkpointId} references {@code copies}. */
    public synchronized void referenced(
            long checkpointId, SharingFilesStrategy strategy, Set<String> copies) {
        if (strategy != SharingFilesStrategy.NO_SHARING) {
            referenced.put(checkpointId, Set.copyOf(copies));
        }
    }

    public synchronized void completed(long checkpointId) {
        if (checkpointId > lastCompleted && referenced.containsKey(checkpointId)) {
            referenced.headMap(checkpointId).clear();
            lastCompleted = checkpointId;
        }
    }

    public synchronized void aborted(long checkpointId) {
        referenced.remove(checkpointId);
    }
}
