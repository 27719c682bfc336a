package io.taishan.kv.server.storage;

/**
 * What the server says of one shard's snapshot: its id, whether it is pinned (a native
 * savepoint's), when it was taken, and the size and files of the cut that holds it (shared with the
 * other shards of that cut).
 *
 * @param reused true when it was made from the previous snapshot's files because the shard had not
 *     changed since
 * @param inCheckpointStorage true when its files are in checkpoint storage (this node uploaded or
 *     fetched them)
 * @param local false when only checkpoint storage holds it: the node dropped its local copy (a
 *     cache of the durable one) and a restore downloads it
 */
public record SnapshotMeta(
        long snapshotId,
        boolean pinned,
        long createdAtMillis,
        long sizeBytes,
        int fileCount,
        boolean reused,
        boolean inCheckpointStorage,
        boolean local) {}
