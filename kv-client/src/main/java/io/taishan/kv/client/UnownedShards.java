package io.taishan.kv.client;

import io.taishan.kv.protocol.ClusterNode;
import java.util.List;

/**
 * The shards of a table a node holds (leased there, or with data there) but does not own under its
 * view of the cluster: left behind when the cluster's nodes changed. Their data and snapshots stay
 * on the node, unused, until the table is dropped.
 *
 * @param shards ascending
 */
public record UnownedShards(ClusterNode node, List<Integer> shards) {
    public UnownedShards {
        shards = List.copyOf(shards);
    }
}
