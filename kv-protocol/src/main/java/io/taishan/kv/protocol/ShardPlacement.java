package io.taishan.kv.protocol;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.annotation.Nullable;

/**
 * Which node owns a shard: rendezvous (highest random weight) hashing over the nodes' names. Shard
 * {@code s} of a table with {@code C} shards belongs to block {@code b = floor(s·B/C)} of the
 * table's {@code B = min(C, 128)} blocks of contiguous shards, and the block belongs to the node
 * whose {@link #score} of {@code (C, b)} is highest. Server and client compute it the same way; it
 * is part of the protocol ({@code ClusterInfoResponse.placement} = {@link #VERSION}), so the
 * function below never changes under this version number.
 *
 * <p><b>Why rendezvous.</b> With {@code floor(s·N/C)} (the map before named nodes) adding a node to
 * {@code N} moved about half of all shards; here adding or removing one node moves only the shards
 * that go to or come from that node, about {@code 1/N} of them, and nothing moves between the
 * others. A name, not a position, identifies a node, so the list's order means nothing and any node
 * can leave. Keyed by {@code (C, b)} and not by the table: every table's shard {@code s} of the
 * same shard count sits on one node, so a clone between such tables (a job restored from another's
 * checkpoint) stays on its node.
 *
 * <p><b>Why blocks of shards, and why 128 of them.</b> A Flink subtask owns a contiguous range of
 * {@code C/P} key groups (shards), and the kv-server keeps a subtask's shards on a node in one
 * store, flushed and cut once per checkpoint. Placed shard by shard, a subtask of a large table has
 * shards, hence a store and a cut per checkpoint, on every node; placed by contiguous blocks it
 * touches only the nodes of the {@code 128/P} blocks (or so) it spans. Fewer, larger blocks mean
 * fewer stores but a worse balance: {@code B} blocks fall on {@code N} nodes as a multinomial draw
 * (a node's share varies by about {@code sqrt((N-1)/B)}), and every table of one shard count shares
 * the same draw. 128 blocks give every table the balance of a 128-shard table placed shard by
 * shard, which is Flink's default max parallelism and what every cluster lives with already; 256
 * blocks would balance large tables better, at about twice the stores per subtask. Measured with
 * {@code ShardPlacementProbe}, each figure the mean over 40 sets of node names (worst set in
 * brackets); <i>balance</i> is the fullest node's share over the mean, <i>stores</i> the nodes a
 * subtask of a job with parallelism {@code P} has shards on (Flink's key-group ranges),
 * <i>moved</i> the shards whose owner changes when a node is added:
 *
 * <pre>
 *     C  N  placement           balance      stores P=8  P=32  P=128   moved N-&gt;N+1
 *   any  3  floor(s·N/C), old   1.00                1.25  1.06   1.00   50%
 *   any  9  floor(s·N/C), old   1.00-1.05           2.00  1.25   1.06   50%
 *   128  3  shard by shard      1.13 (1.27)         3.00  2.42   1.00   25.6%
 *   128  4  shard by shard      1.19 (1.41)         3.97  2.74   1.00   19.6%
 *   128  9  shard by shard      1.37 (1.76)         7.54  3.39   1.00    9.7%
 *  1024  4  shard by shard      1.06 (1.12)         4.00  4.00   3.59   20.5%
 *  1024  4  256 blocks          1.14 (1.31)         4.00  3.59   1.75   20.3%
 *  1024  4  128 blocks          1.19 (1.50)         3.96  2.73   1.00   20.6%
 * 32768  3  shard by shard      1.01 (1.02)         3.00  3.00   3.00   25.0%
 * 32768  3  256 blocks          1.10 (1.20)         3.00  2.89   1.66   25.1%
 * 32768  3  128 blocks          1.12 (1.38)         2.99  2.42   1.00   25.3%
 * 32768  4  shard by shard      1.01 (1.03)         4.00  4.00   4.00   20.0%
 * 32768  4  256 blocks          1.15 (1.33)         4.00  3.61   1.74   19.6%
 * 32768  4  128 blocks          1.19 (1.38)         3.95  2.72   1.00   19.5%
 * 32768  9  shard by shard      1.03 (1.05)         9.00  9.00   9.00   10.0%
 * 32768  9  256 blocks          1.29 (1.76)         8.80  5.54   1.89   10.0%
 * 32768  9  128 blocks          1.43 (1.83)         7.61  3.39   1.00   10.0%
 * </pre>
 *
 * <p>So a job of parallelism 128 or more has each subtask on one node, as with the old contiguous
 * map, and one of parallelism 32 on 2.4 to 3.4 nodes instead of all; what it costs is a fullest
 * node up to about 40% above the mean on 9 nodes, as the default 128-shard tables already have.
 * Every table of a shard count shares one draw, so a cluster does not average it out: size every
 * node for the fullest one ({@code taishan-kv-admin cluster} shows each node's shards).
 *
 * <p><b>Cost.</b> A lookup is an array read once the shard count's owners are cached (one array of
 * {@code C} shorts per shard count, computed from {@code B·N} scores on its first use: 150 µs for
 * 32,768 shards on 9 nodes): 1.7 to 2.3 ns per lookup, 20 to 35 ns when successive lookups
 * alternate between two shard counts (a map lookup); measured on 2 cores at a load average of 6. A
 * request costs about 100 µs on loopback.
 *
 * <p><b>The function</b>, for other implementations: {@code key(name)} is 64-bit FNV-1a over the
 * name's UTF-8 bytes, passed through {@link #mix}; {@code score(name, C, b) = mix(key(name) +
 * mix((C << 32) | b))} in 64-bit two's complement arithmetic, compared as unsigned; a tie (never
 * seen) goes to the name that sorts first. {@link #mix} is SplitMix64's finalizer. Immutable and
 * thread-safe.
 */
public final class ShardPlacement {
    /** This function's number on the wire ({@code ClusterInfoResponse.placement}). */
    public static final int VERSION = 1;

    /** The most blocks a table is placed in; a table of fewer shards is placed shard by shard. */
    public static final int MAX_BLOCKS = 128;

    /** The most shards a table has, as the server enforces it. */
    static final int MAX_SHARDS = 32768;

    private final List<String> names;
    private final long[] keys;
    private final int maxBlocks;
    private final ConcurrentHashMap<Integer, Owners> byShardCount = new ConcurrentHashMap<>();

    /** The owners of one shard count; the last one used is kept beside the map, unboxed. */
    @Nullable private volatile Owners recent;

    private record Owners(int shardCount, short[] ofShard) {}

    private ShardPlacement(List<String> names, int maxBlocks) {
        this.names = List.copyOf(names);
        if (this.names.isEmpty()) {
            throw new IllegalArgumentException("a placement needs at least one node");
        }
        if (this.names.size() > Short.MAX_VALUE) {
            throw new IllegalArgumentException(
                    "at most " + Short.MAX_VALUE + " nodes, not " + this.names.size());
        }
        Set<String> seen = new HashSet<>();
        for (String name : this.names) {
            if (!seen.add(name)) {
                throw new IllegalArgumentException("node name '" + name + "' given twice");
            }
        }
        this.keys = new long[this.names.size()];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = key(this.names.get(i));
        }
        this.maxBlocks = maxBlocks;
    }

    /**
     * The placement over these node names; {@link #ownerOf} answers positions in this list, whose
     * order does not change who owns what.
     */
    public static ShardPlacement of(List<String> names) {
        return new ShardPlacement(names, MAX_BLOCKS);
    }

    /** With another block limit: for measuring the choice of {@link #MAX_BLOCKS} only. */
    static ShardPlacement withMaxBlocks(List<String> names, int maxBlocks) {
        return new ShardPlacement(names, maxBlocks);
    }

    /** The node names, as given. */
    public List<String> names() {
        return names;
    }

    /** The position in {@link #names()} of the node that owns the shard. */
    public int ownerOf(int shard, int shardCount) {
        Owners owners = recent;
        if (owners == null || owners.shardCount != shardCount) {
            owners = owners(shardCount);
            recent = owners;
        }
        if (shard < 0 || shard >= shardCount) {
            throw new IllegalArgumentException(
                    "shard " + shard + " out of range [0, " + shardCount + ")");
        }
        return owners.ofShard[shard];
    }

    /** The name of the node that owns the shard. */
    public String ownerNameOf(int shard, int shardCount) {
        return names.get(ownerOf(shard, shardCount));
    }

    /** How many blocks a table of {@code shardCount} shards is placed in. */
    public static int blockCount(int shardCount) {
        return Math.min(shardCount, MAX_BLOCKS);
    }

    /** The block of a shard: blocks are contiguous runs of shards, sizes differing by one. */
    public static int blockOf(int shard, int shardCount) {
        return blockOf(shard, shardCount, blockCount(shardCount));
    }

    private static int blockOf(int shard, int shardCount, int blocks) {
        return (int) ((long) shard * blocks / shardCount);
    }

    private Owners owners(int shardCount) {
        if (shardCount <= 0 || shardCount > MAX_SHARDS) {
            throw new IllegalArgumentException(
                    "shard count " + shardCount + " out of range [1, " + MAX_SHARDS + "]");
        }
        return byShardCount.computeIfAbsent(shardCount, this::computeOwners);
    }

    private Owners computeOwners(int shardCount) {
        int blocks = Math.min(shardCount, maxBlocks);
        short[] ofBlock = new short[blocks];
        for (int b = 0; b < blocks; b++) {
            ofBlock[b] = (short) highestScore(shardCount, b);
        }
        short[] ofShard = new short[shardCount];
        for (int s = 0; s < shardCount; s++) {
            ofShard[s] = ofBlock[blockOf(s, shardCount, blocks)];
        }
        return new Owners(shardCount, ofShard);
    }

    private int highestScore(int shardCount, int block) {
        int best = 0;
        long bestScore = score(keys[0], shardCount, block);
        for (int n = 1; n < keys.length; n++) {
            long score = score(keys[n], shardCount, block);
            int order = Long.compareUnsigned(score, bestScore);
            if (order > 0 || (order == 0 && names.get(n).compareTo(names.get(best)) < 0)) {
                best = n;
                bestScore = score;
            }
        }
        return best;
    }

    /** A node's weight for block {@code block} of a table of {@code shardCount} shards. */
    static long score(long nodeKey, int shardCount, int block) {
        return mix(nodeKey + mix(((long) shardCount << 32) | block));
    }

    /** A node name's 64-bit key: FNV-1a over its UTF-8 bytes, mixed. */
    static long key(String name) {
        long h = 0xcbf29ce484222325L;
        for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xff;
            h *= 0x100000001b3L;
        }
        return mix(h);
    }

    /** SplitMix64's finalizer: a bijection of 64-bit values in which every input bit avalanches. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    @Override
    public String toString() {
        return "ShardPlacement" + names;
    }
}
