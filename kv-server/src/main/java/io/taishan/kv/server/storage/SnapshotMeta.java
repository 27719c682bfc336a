package io.taishan.kv.server.storage;

/**
 * What the server says of one shard's snapshot: its id, whether it is pinned (a native
 * savepoint's), when it was taken, and the size and files of the cut that holds it (shared with the
 * other shards of that cut).
 *
 * @param reused true when it was made from the previous snapshot's files because the shard had not
 *     changed since
 */
public record SnapshotMeta(
        long snapshotId,
        boolean pinned,
        long createdAtMillis,
        long sizeBytes,
        int fileCount,
        boolean reused) {}
