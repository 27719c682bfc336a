package io.taishan.kv.admin;

import io.taishan.kv.client.SnapshotInfo;
import java.util.List;

/**
 * Sums over shard snapshots. Files hard-linked into several snapshots count once in each, so a sum
 * can exceed the disk space the snapshots take together.
 */
record SnapshotTotals(
        int count,
        int pinned,
        int local,
        int inCheckpointStorage,
        long bytes,
        long files,
        long oldestId,
        long newestId,
        long oldestCreatedMillis) {

    static SnapshotTotals of(List<SnapshotInfo> snapshots) {
        int pinned = 0;
        int local = 0;
        int inCheckpointStorage = 0;
        long bytes = 0;
        long files = 0;
        long oldestId = Long.MAX_VALUE;
        long newestId = Long.MIN_VALUE;
        long oldestCreated = Long.MAX_VALUE;
        for (SnapshotInfo s : snapshots) {
            pinned += s.pinned() ? 1 : 0;
            local += s.local() ? 1 : 0;
            inCheckpointStorage += s.inCheckpointStorage() ? 1 : 0;
            bytes += s.sizeBytes();
            files += s.fileCount();
            oldestId = Math.min(oldestId, s.snapshotId());
            newestId = Math.max(newestId, s.snapshotId());
            oldestCreated = Math.min(oldestCreated, s.createdAtMillis());
        }
        return new SnapshotTotals(
                snapshots.size(),
                pinned,
                local,
                inCheckpointStorage,
                bytes,
                files,
                oldestId,
                newestId,
                oldestCreated);
    }
}
