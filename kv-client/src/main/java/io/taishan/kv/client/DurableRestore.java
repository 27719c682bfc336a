package io.taishan.kv.client;

import java.util.List;

/**
 * What {@link KvStore.Durable#restoreShards} did: the new leases, in the order of the restores, and
 * the bytes downloaded from checkpoint storage (0 when every node held its snapshots).
 */
public record DurableRestore(List<ShardLease> leases, long downloadedBytes) {
    public DurableRestore {
        leases = List.copyOf(leases);
    }
}
