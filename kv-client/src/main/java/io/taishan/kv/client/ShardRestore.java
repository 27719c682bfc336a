package io.taishan.kv.client;

import java.util.Objects;
import javax.annotation.Nullable;

/**
 * One shard of a {@link KvStore#restoreShards} call: it takes snapshot {@code snapshotId} of the
 * same shard of {@code sourceTable}, the table restored into (a rollback) or another one with the
 * same shard count (a clone).
 *
 * @param durableCutId the cut in checkpoint storage that holds the snapshot ({@link
 *     KvStore.Durable#restoreShards}), fetched only by a node that does not hold the snapshot
 *     itself; null: the snapshot must be on the node
 */
public record ShardRestore(
        int shard, String sourceTable, long snapshotId, @Nullable String durableCutId) {
    public ShardRestore {
        Objects.requireNonNull(sourceTable, "sourceTable");
        if (shard < 0) {
            throw new IllegalArgumentException("shard must be >= 0: " + shard);
        }
    }

    /** A snapshot that must be on the node. */
    public ShardRestore(int shard, String sourceTable, long snapshotId) {
        this(shard, sourceTable, snapshotId, null);
    }
}
