package io.taishan.kv.protocol;

/**
 * Which node owns a shard: node {@code n} of {@code N} owns shard {@code s} of a table with {@code
 * C} shards iff {@code floor(s * N / C) == n}. Each node thus holds one contiguous range of every
 * table's shards, so a Flink subtask (which owns a contiguous key-group range) talks to few nodes,
 * and the map needs no per-table configuration. Server and client compute it the same way.
 */
public final class ShardMap {
    private ShardMap() {}

    public static int nodeOf(int shard, int shardCount, int nodeCount) {
        if (shard < 0 || shard >= shardCount) {
            throw new IllegalArgumentException(
                    "shard " + shard + " out of range [0, " + shardCount + ")");
        }
        return (int) ((long) shard * nodeCount / shardCount);
    }
}
