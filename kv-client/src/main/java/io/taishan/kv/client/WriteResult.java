package io.taishan.kv.client;

import java.util.List;

/** What a {@link KvStore#write} did: the snapshots its markers took, in order per shard. */
public record WriteResult(List<SnapshotInfo> snapshots) {
    public static final WriteResult EMPTY = new WriteResult(List.of());
}
