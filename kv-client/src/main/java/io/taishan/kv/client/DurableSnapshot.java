package io.taishan.kv.client;

import java.util.List;

/**
 * What {@link KvStore.Durable#uploadSnapshot} made durable: every cut that holds one of the shards'
 * snapshot, with its copies, and the bytes written (reused copies not counted).
 */
public record DurableSnapshot(List<DurableCut> cuts, long uploadedBytes) {
    public DurableSnapshot {
        cuts = List.copyOf(cuts);
    }
}
