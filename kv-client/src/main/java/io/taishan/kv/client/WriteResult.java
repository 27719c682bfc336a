package io.taishan.kv.client;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * What a {@link KvStore#write} did: the snapshots its markers took, in order per shard, and the
 * version of each written shard's Bloom filter once the write was applied.
 *
 * @param filterVersions shard to filter version, for the written shards whose filter the server can
 *     serve (see {@link KvStore.Filters}); a shard is missing while its filter is unavailable
 */
public record WriteResult(List<SnapshotInfo> snapshots, Map<Integer, Long> filterVersions) {
    public static final WriteResult EMPTY = new WriteResult(List.of());

    public WriteResult(List<SnapshotInfo> snapshots) {
        this(snapshots, Map.of());
    }

    /**
     * The shard's filter version after this write, or empty if the shard was not written or its
     * filter is unavailable. A version other than that of the client's loaded copy means the server
     * rebuilt the filter: fetching it again gives a more precise copy.
     */
    public OptionalLong filterVersion(int shard) {
        Long version = filterVersions.get(shard);
        return version == null ? OptionalLong.empty() : OptionalLong.of(version);
    }
}
