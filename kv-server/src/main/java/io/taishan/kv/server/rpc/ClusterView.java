package io.taishan.kv.server.rpc;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.ShardMap;
import io.taishan.kv.server.storage.KvServerException;
import java.util.List;

/**
 * This node's place in the static shard map: the ordered node list and which one it is. A
 * single-node server is a list of one.
 */
public final class ClusterView {
    private final List<String> nodes;
    private final int selfIndex;

    public ClusterView(List<String> nodes, int selfIndex) {
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("a cluster has at least one node");
        }
        if (selfIndex < 0 || selfIndex >= nodes.size()) {
            throw new IllegalArgumentException(
                    "node index " + selfIndex + " out of range for " + nodes.size() + " node(s)");
        }
        this.nodes = List.copyOf(nodes);
        this.selfIndex = selfIndex;
    }

    public List<String> nodes() {
        return nodes;
    }

    public int selfIndex() {
        return selfIndex;
    }

    public String selfAddress() {
        return nodes.get(selfIndex);
    }

    public boolean owns(int shard, int shardCount) {
        return ShardMap.nodeOf(shard, shardCount, nodes.size()) == selfIndex;
    }

    /** Fails with SHARD_NOT_OWNED, naming the owner, unless this node owns the shard. */
    public void checkOwned(String table, int shard, int shardCount) {
        int owner = ShardMap.nodeOf(shard, shardCount, nodes.size());
        if (owner != selfIndex) {
            throw new KvServerException(
                    ErrorCode.SHARD_NOT_OWNED,
                    "table '"
                            + table
                            + "' shard "
                            + shard
                            + " is owned by node "
                            + owner
                            + " ("
                            + nodes.get(owner)
                            + "), not by node "
                            + selfIndex
                            + " ("
                            + selfAddress()
                            + ")");
        }
    }
}
