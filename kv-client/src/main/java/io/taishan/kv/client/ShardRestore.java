package io.taishan.kv.client;

import java.util.Objects;

/**
 * One shard of a {@link KvStore#restoreShards} call: it takes snapshot {@code snapshotId} of the
 * same shard of {@code sourceTable}, the table restored into (a rollback) or another one with the
 * same shard count (a clone).
 */
public record ShardRestore(int shard, String sourceTable, long snapshotId) {
    public ShardRestore {
        Objects.requireNonNull(sourceTable, "sourceTable");
        if (shard < 0) {
            throw new IllegalArgumentException("shard must be >= 0: " + shard);
        }
    }
}
