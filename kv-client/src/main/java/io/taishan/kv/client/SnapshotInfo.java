package io.taishan.kv.client;

/**
 * A durable snapshot of one shard.
 *
 * @param reused true when the shard had no writes since its previous snapshot, whose files were
 *     reused
 */
public record SnapshotInfo(
        String table,
        int shard,
        long snapshotId,
        boolean pinned,
        long createdAtMillis,
        long sizeBytes,
        int fileCount,
        boolean reused) {}
