package io.taishan.kv.server.rpc;

import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;

/**
 * Which shards this node serves: those {@link ClusterView#ownerOf} gives it under its own view of
 * the cluster (its {@code cluster.nodes}, fixed while it runs). Every call naming a shard is
 * checked here, so a client that routes by another view (a change of the nodes under way, or a
 * client older than named nodes) is refused rather than served from the wrong node; the refusal
 * names the owner and carries this view's fingerprint ({@link NotOwnerException}). A single node is
 * a view of one, which owns everything.
 */
public final class ShardOwnership {
    private final ClusterView view;
    private final int selfIndex;

    /**
     * @throws IllegalArgumentException when {@code selfName} is not in the view
     */
    public ShardOwnership(ClusterView view, String selfName) {
        this.view = view;
        this.selfIndex = view.indexOf(selfName);
        if (selfIndex < 0) {
            throw new IllegalArgumentException(
                    "node '" + selfName + "' is not in the cluster (" + view.nameList() + ")");
        }
    }

    public ClusterView view() {
        return view;
    }

    public ClusterNode self() {
        return view.node(selfIndex);
    }

    /** This node's position in the view's name order. */
    public int selfIndex() {
        return selfIndex;
    }

    public String selfAddress() {
        return self().address();
    }

    public boolean owns(int shard, int shardCount) {
        return view.ownerOf(shard, shardCount) == selfIndex;
    }

    /** Fails with SHARD_NOT_OWNED, naming the owner, unless this node owns the shard. */
    public void checkOwned(String table, int shard, int shardCount) {
        int owner = view.ownerOf(shard, shardCount);
        if (owner != selfIndex) {
            throw new NotOwnerException(
                    "table '"
                            + table
                            + "' shard "
                            + shard
                            + " is owned by "
                            + view.node(owner).name()
                            + " ("
                            + view.node(owner).address()
                            + "), not by "
                            + self().name()
                            + " ("
                            + selfAddress()
                            + "), under this node's view of the cluster ("
                            + view.nameList()
                            + "; view "
                            + view.fingerprintHex()
                            + ")",
                    view.fingerprintHex());
        }
    }
}
