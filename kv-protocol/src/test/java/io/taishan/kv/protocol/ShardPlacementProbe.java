package io.taishan.kv.protocol;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Not a test: the figures behind {@link ShardPlacement}'s choice of blocks, printed as the tables
 * of its class doc. For each shard count, node count and block limit (and the old {@code
 * floor(s·N/C)} map for comparison): the largest node's share over the mean, how many nodes a Flink
 * subtask of a job with parallelism P has shards on (the stores and cuts per checkpoint it costs),
 * the shards that move when a node is added, and then the cost of a lookup.
 *
 * <pre>
 * mvn -q -B -o -pl kv-protocol test-compile exec:java -Dexec.classpathScope=test \
 *     -Dexec.mainClass=io.taishan.kv.protocol.ShardPlacementProbe
 * </pre>
 */
public final class ShardPlacementProbe {
    private static final int[] SHARD_COUNTS = {128, 1024, 32768};
    private static final int[] NODE_COUNTS = {3, 4, 5, 8, 9};
    private static final int[] PARALLELISMS = {8, 32, 128};

    /** 0: the old floor(s·N/C) map; 32768: shard by shard. */
    private static final int[] BLOCK_LIMITS = {0, 32768, 1024, 256, 128, 64};

    private ShardPlacementProbe() {}

    /** Independent name sets per configuration: a placement is one draw, these are many. */
    private static final int DRAWS = 40;

    public static void main(String[] args) {
        System.out.printf(
                "load average %.2f, %d CPUs%n",
                java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                        .getSystemLoadAverage(),
                Runtime.getRuntime().availableProcessors());
        System.out.println(
                "C      N  blocks  balance mean/worst  stores/subtask P=8   P=32  P=128"
                        + "  moved N->N+1");
        for (int c : SHARD_COUNTS) {
            for (int n : NODE_COUNTS) {
                for (int limit : BLOCK_LIMITS) {
                    if (limit != 0 && limit != 32768 && limit >= c) {
                        continue;
                    }
                    int draws = limit == 0 ? 1 : DRAWS;
                    double balance = 0;
                    double worst = 0;
                    double[] stores = new double[PARALLELISMS.length];
                    double moved = 0;
                    for (int d = 0; d < draws; d++) {
                        int[] owners = owners(c, names(d, n), limit);
                        double b = balance(owners, n);
                        balance += b / draws;
                        worst = Math.max(worst, b);
                        for (int i = 0; i < PARALLELISMS.length; i++) {
                            stores[i] += storesPerSubtask(owners, PARALLELISMS[i]) / draws;
                        }
                        moved += moved(owners, owners(c, names(d, n + 1), limit)) / draws;
                    }
                    System.out.println(
                            String.format(
                                    Locale.ROOT,
                                    "%-6d %-2d %-7s %5.2f / %4.2f %19.2f %6.2f %6.2f  %5.1f%%",
                                    c,
                                    n,
                                    limit == 0
                                            ? "floor"
                                            : limit >= c ? "shard" : String.valueOf(limit),
                                    balance,
                                    worst,
                                    stores[0],
                                    stores[1],
                                    stores[2],
                                    100 * moved));
                }
            }
        }
        lookupCost();
    }

    /** Draw {@code d}'s names of {@code n} nodes; the first n of n+1 are the same. */
    static List<String> names(int d, int n) {
        List<String> names = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            names.add(d == 0 ? "kv" + i : "d" + d + "-kv" + i);
        }
        return names;
    }

    /** Each shard's owner, as a position in {@code kv1..kvN}. */
    static int[] owners(int shardCount, List<String> names, int blockLimit) {
        int nodeCount = names.size();
        int[] owners = new int[shardCount];
        if (blockLimit == 0) {
            for (int s = 0; s < shardCount; s++) {
                owners[s] = (int) ((long) s * nodeCount / shardCount);
            }
            return owners;
        }
        ShardPlacement placement = ShardPlacement.withMaxBlocks(names, blockLimit);
        for (int s = 0; s < shardCount; s++) {
            owners[s] = placement.ownerOf(s, shardCount);
        }
        return owners;
    }

    static double balance(int[] owners, int nodeCount) {
        int[] perNode = new int[nodeCount];
        for (int owner : owners) {
            perNode[owner]++;
        }
        int max = 0;
        for (int count : perNode) {
            max = Math.max(max, count);
        }
        return max / ((double) owners.length / nodeCount);
    }

    /**
     * The mean number of nodes a subtask has shards on, over the subtasks of a job with this
     * parallelism; key groups are given to subtasks as Flink's {@code KeyGroupRangeAssignment}
     * does.
     */
    static double storesPerSubtask(int[] owners, int parallelism) {
        int shardCount = owners.length;
        int p = Math.min(parallelism, shardCount);
        long total = 0;
        for (int i = 0; i < p; i++) {
            int start = (int) (((long) i * shardCount + p - 1) / p);
            int end = (int) (((long) (i + 1) * shardCount - 1) / p);
            Set<Integer> nodes = new HashSet<>();
            for (int s = start; s <= end; s++) {
                nodes.add(owners[s]);
            }
            total += nodes.size();
        }
        return (double) total / p;
    }

    /** The share of shards whose owner (by name) differs. */
    static double moved(int[] before, int[] after) {
        int moved = 0;
        for (int s = 0; s < before.length; s++) {
            // Positions name the same node in both: the first N names of N+1 are the N.
            if (before[s] != after[s]) {
                moved++;
            }
        }
        return (double) moved / before.length;
    }

    private static void lookupCost() {
        ShardPlacement placement = ShardPlacement.of(names(0, 9));
        int[] counts = {128, 32768};
        for (int round = 0; round < 5; round++) {
            for (int c : counts) {
                long sum = 0;
                long t0 = System.nanoTime();
                int lookups = 50_000_000;
                int s = 0;
                for (int i = 0; i < lookups; i++) {
                    s = (s + 7919) & (c - 1);
                    sum += placement.ownerOf(s, c);
                }
                long t1 = System.nanoTime();
                System.out.printf(
                        Locale.ROOT,
                        "round %d: %.2f ns per lookup, C=%d, 9 nodes (sum %d)%n",
                        round,
                        (t1 - t0) / (double) lookups,
                        c,
                        sum);
            }
            // Alternating shard counts defeats the one-entry cache: the map lookup's cost.
            long sum = 0;
            long t0 = System.nanoTime();
            int lookups = 20_000_000;
            for (int i = 0; i < lookups; i++) {
                int c = (i & 1) == 0 ? 128 : 32768;
                sum += placement.ownerOf(i & 127, c);
            }
            long t1 = System.nanoTime();
            System.out.printf(
                    Locale.ROOT,
                    "round %d: %.2f ns per lookup, C alternating 128/32768 (sum %d)%n",
                    round,
                    (t1 - t0) / (double) lookups,
                    sum);
        }
        long t0 = System.nanoTime();
        ShardPlacement fresh = ShardPlacement.of(names(0, 9));
        fresh.ownerOf(0, 32768);
        System.out.printf(
                Locale.ROOT,
                "first lookup of C=32768 on 9 nodes (computes the owners): %.1f us%n",
                (System.nanoTime() - t0) / 1000.0);
    }
}
