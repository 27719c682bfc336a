package io.taishan.snapshot;

import java.util.Objects;

/**
 * Where one key group's data lives at a checkpoint: snapshot {@code snapshotId} of shard {@code
 * shard} (= the key group) of table {@code table}.
 */
public record ShardSnapshotRef(String table, int shard, long snapshotId) {
    public ShardSnapshotRef {
        Objects.requireNonNull(table, "table");
        if (shard < 0) {
            throw new IllegalArgumentException("shard must be >= 0: " + shard);
        }
    }
}
