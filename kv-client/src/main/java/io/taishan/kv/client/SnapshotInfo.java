package io.taishan.kv.client;

/**
 * A snapshot of one shard on the node that owns it.
 *
 * @param reused true when the shard had no writes since its previous snapshot, whose files were
 *     reused
 * @param inCheckpointStorage true when its files are in the job's checkpoint storage too (durable
 *     checkpoints)
 * @param local false when only checkpoint storage holds it: the node dropped its local copy, and a
 *     restore from it downloads
 */
public record SnapshotInfo(
        String table,
        int shard,
        long snapshotId,
        boolean pinned,
        long createdAtMillis,
        long sizeBytes,
        int fileCount,
        boolean reused,
        boolean inCheckpointStorage,
        boolean local) {}
