package io.taishan.kv.client;

import java.util.Objects;

/**
 * The right to read and write one shard: the epoch that {@link KvStore#openShard}, {@link
 * KvStore#restore} or {@link KvStore#cloneShard} handed out. Once somebody opens the shard again,
 * every call with this lease fails with {@link FencedException}.
 */
public record ShardLease(String table, int shard, long epoch) {
    public ShardLease {
        Objects.requireNonNull(table, "table");
        if (shard < 0) {
            throw new IllegalArgumentException("shard must be >= 0: " + shard);
        }
    }
}
