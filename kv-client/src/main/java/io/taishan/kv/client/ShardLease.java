package io.taishan.kv.client;

import java.util.Objects;

/**
 * The right to read and write one shard: the epoch that {@link KvStore#openShard}, {@link
 * KvStore#restore} or {@link KvStore#cloneShard} handed out. Once somebody opens the shard again,
 * every call with this lease fails with {@link FencedException}.
 *
 * @param node the name of the node that handed it out: epochs are counted per node, so the client
 *     presents a lease to that node only, and refuses it with {@link ShardNotOwnedException} once
 *     the cluster changed and another node owns the shard. Empty: not bound to a node (routed by
 *     the current view, the server's epoch check alone guarding it)
 */
public record ShardLease(String table, int shard, long epoch, String node) {
    public ShardLease {
        Objects.requireNonNull(table, "table");
        Objects.requireNonNull(node, "node");
        if (shard < 0) {
            throw new IllegalArgumentException("shard must be >= 0: " + shard);
        }
    }

    /** A lease not bound to a node. */
    public ShardLease(String table, int shard, long epoch) {
        this(table, shard, epoch, "");
    }
}
