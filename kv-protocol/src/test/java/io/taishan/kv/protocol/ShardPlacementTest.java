package io.taishan.kv.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The properties {@link ShardPlacement} promises: one owner per shard, whatever the order of the
 * names; a node added or removed moves only the shards to or from it, about 1/N of them; big tables
 * in 256 contiguous blocks, small ones shard by shard; a pinned function.
 *
 * <p>The function is deterministic, so the statistical bounds below are not flaky: they hold or
 * fail for good. They are 4 standard deviations of a binomial draw wide, so a correct function
 * passes them and a biased one (a hash that favours a name, or moves shards between the nodes that
 * stay) fails.
 */
class ShardPlacementTest {

    static List<String> names(int n) {
        List<String> names = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            names.add("kv" + i);
        }
        return names;
    }

    /** 4 standard deviations of the share of {@code blocks} draws that land with probability p. */
    private static double fourSigma(double p, int blocks) {
        return 4 * Math.sqrt(p * (1 - p) / blocks);
    }

    @ParameterizedTest(name = "{0} shards, {1} -> {1}+1 nodes")
    @CsvSource({
        "128,3", "128,4", "128,8", "1024,3", "1024,4", "1024,8", "32768,3", "32768,4", "32768,8"
    })
    void anAddedNodeTakesAboutOneInNPlusOneShardsAndNothingElseMoves(int shardCount, int n) {
        ShardPlacement before = ShardPlacement.of(names(n));
        ShardPlacement after = ShardPlacement.of(names(n + 1));
        String added = "kv" + (n + 1);
        int moved = 0;
        for (int s = 0; s < shardCount; s++) {
            String was = before.ownerNameOf(s, shardCount);
            String is = after.ownerNameOf(s, shardCount);
            if (!was.equals(is)) {
                moved++;
                assertThat(is).as("new owner of moved shard %d", s).isEqualTo(added);
            }
        }
        double expected = 1.0 / (n + 1);
        assertThat((double) moved / shardCount)
                .isCloseTo(
                        expected,
                        within(fourSigma(expected, ShardPlacement.blockCount(shardCount))));
    }

    @ParameterizedTest(name = "{0} shards, {1}+1 -> {1} nodes")
    @CsvSource({
        "128,3", "128,4", "128,8", "1024,3", "1024,4", "1024,8", "32768,3", "32768,4", "32768,8"
    })
    void aRemovedNodesShardsAndOnlyThoseMove(int shardCount, int n) {
        List<String> all = names(n + 1);
        List<String> rest = new ArrayList<>(all);
        rest.remove("kv2");
        ShardPlacement before = ShardPlacement.of(all);
        ShardPlacement after = ShardPlacement.of(rest);
        int moved = 0;
        for (int s = 0; s < shardCount; s++) {
            String was = before.ownerNameOf(s, shardCount);
            String is = after.ownerNameOf(s, shardCount);
            if (was.equals("kv2")) {
                moved++;
            } else {
                assertThat(is).as("owner of shard %d, not kv2's", s).isEqualTo(was);
            }
        }
        double expected = 1.0 / (n + 1);
        assertThat((double) moved / shardCount)
                .isCloseTo(
                        expected,
                        within(fourSigma(expected, ShardPlacement.blockCount(shardCount))));
    }

    @Test
    void overManyShardCountsTheShareMovedAndEachNodesShareAreExact() {
        // Each shard count is an independent draw: summed over 2,000 of them the shares must come
        // out within a fraction of a percent, which a hash that favours some name would miss.
        for (int n : new int[] {3, 4, 8}) {
            ShardPlacement before = ShardPlacement.of(names(n));
            ShardPlacement after = ShardPlacement.of(names(n + 1));
            long blocks = 0;
            long moved = 0;
            long[] perNode = new long[n];
            for (int c = 1; c <= 2000; c++) {
                int b = ShardPlacement.blockCount(c);
                for (int block = 0; block < b; block++) {
                    int shard = (int) (((long) block * c + b - 1) / b);
                    blocks++;
                    int owner = before.ownerOf(shard, c);
                    perNode[owner]++;
                    if (after.ownerOf(shard, c) != owner) {
                        moved++;
                    }
                }
            }
            assertThat((double) moved / blocks)
                    .as("moved on %d -> %d", n, n + 1)
                    .isCloseTo(1.0 / (n + 1), within(0.005));
            for (int i = 0; i < n; i++) {
                assertThat((double) perNode[i] / blocks)
                        .as("share of kv%d of %d", i + 1, n)
                        .isCloseTo(1.0 / n, within(0.005));
            }
        }
    }

    @ParameterizedTest(name = "{0} shards")
    @ValueSource(ints = {129, 1000, 1024, 4096, 32768})
    void aLargeTableIsPlacedIn128ContiguousBlocks(int shardCount) {
        ShardPlacement placement = ShardPlacement.of(names(5));
        assertThat(ShardPlacement.blockCount(shardCount)).isEqualTo(128);
        int[] sizes = new int[128];
        int previousBlock = 0;
        for (int s = 0; s < shardCount; s++) {
            int block = ShardPlacement.blockOf(s, shardCount);
            assertThat(block).isBetween(previousBlock, previousBlock + 1);
            if (block == previousBlock && s > 0) {
                assertThat(placement.ownerOf(s, shardCount))
                        .isEqualTo(placement.ownerOf(s - 1, shardCount));
            }
            previousBlock = block;
            sizes[block]++;
        }
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (int size : sizes) {
            min = Math.min(min, size);
            max = Math.max(max, size);
        }
        assertThat(max - min).isLessThanOrEqualTo(1);
    }

    @ParameterizedTest(name = "{0} shards")
    @ValueSource(ints = {1, 7, 100, 128})
    void aSmallTableIsPlacedShardByShard(int shardCount) {
        for (int s = 0; s < shardCount; s++) {
            assertThat(ShardPlacement.blockOf(s, shardCount)).isEqualTo(s);
        }
    }

    @ParameterizedTest(name = "parallelism {0}")
    @CsvSource({"32,4", "64,2", "128,1", "512,1"})
    void aSubtaskOfALargeTableHasShardsOnFewNodes(int parallelism, int mostNodes) {
        // Flink gives subtask i the key groups [ceil(i·C/P), ceil((i+1)·C/P)): whole blocks here.
        int shardCount = 32768;
        ShardPlacement placement = ShardPlacement.of(names(9));
        for (int i = 0; i < parallelism; i++) {
            int start = (int) (((long) i * shardCount + parallelism - 1) / parallelism);
            int end = (int) (((long) (i + 1) * shardCount - 1) / parallelism);
            Set<Integer> nodes = new HashSet<>();
            for (int s = start; s <= end; s++) {
                nodes.add(placement.ownerOf(s, shardCount));
            }
            assertThat(nodes).as("nodes of subtask %d", i).hasSizeLessThanOrEqualTo(mostNodes);
        }
    }

    @Test
    void theOrderOfTheNamesChangesNothing() {
        List<String> names = names(7);
        List<String> shuffled = new ArrayList<>(names);
        Collections.shuffle(shuffled, new Random(42));
        ShardPlacement a = ShardPlacement.of(names);
        ShardPlacement b = ShardPlacement.of(shuffled);
        for (int c : new int[] {1, 3, 128, 1000, 32768}) {
            for (int s = 0; s < c; s++) {
                assertThat(b.ownerNameOf(s, c)).isEqualTo(a.ownerNameOf(s, c));
            }
        }
    }

    @Test
    void oneNodeOwnsEverything() {
        ShardPlacement one = ShardPlacement.of(List.of("solo"));
        for (int s = 0; s < 32768; s += 97) {
            assertThat(one.ownerOf(s, 32768)).isZero();
        }
    }

    @Test
    void theFunctionIsPinned() {
        // Part of the protocol: a change moves shards away from their data. These values are
        // what version 1 computes; a new function needs a new ShardPlacement.VERSION.
        assertThat(ShardPlacement.mix(0)).isEqualTo(0L);
        assertThat(ShardPlacement.mix(1)).isEqualTo(GOLDEN_MIX_1);
        assertThat(ShardPlacement.key("kv1")).isEqualTo(GOLDEN_KEY_KV1);
        assertThat(ShardPlacement.score(ShardPlacement.key("kv1"), 128, 5))
                .isEqualTo(GOLDEN_SCORE_KV1_128_5);
        ShardPlacement three = ShardPlacement.of(names(3));
        StringBuilder owners = new StringBuilder();
        for (int s = 0; s < 32; s++) {
            owners.append(three.ownerOf(s, 128) + 1);
        }
        assertThat(owners.toString()).isEqualTo(GOLDEN_OWNERS_128);
        owners.setLength(0);
        for (int block = 0; block < 32; block++) {
            owners.append(three.ownerOf(block * 256, 32768) + 1);
        }
        assertThat(owners.toString()).isEqualTo(GOLDEN_OWNERS_32768);
    }

    private static final long GOLDEN_MIX_1 = 6238072747940578789L;
    private static final long GOLDEN_KEY_KV1 = -4387989364489035616L;
    private static final long GOLDEN_SCORE_KV1_128_5 = -6474792146169059545L;

    /** Owners (1 = kv1) of shards 0..31 of 128 on kv1..kv3. */
    private static final String GOLDEN_OWNERS_128 = "31222211111121333212122331122123";

    /** Owners of blocks 0..31 (shards 0, 256, 512, ...) of 32,768 on kv1..kv3. */
    private static final String GOLDEN_OWNERS_32768 = "21311133111211212113213221311232";

    @Test
    void badInputIsRefusedNamingIt() {
        ShardPlacement placement = ShardPlacement.of(names(3));
        assertThatThrownBy(() -> placement.ownerOf(-1, 8))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("shard -1 out of range [0, 8)");
        assertThatThrownBy(() -> placement.ownerOf(8, 8)).hasMessage("shard 8 out of range [0, 8)");
        assertThatThrownBy(() -> placement.ownerOf(0, 0))
                .hasMessage("shard count 0 out of range [1, 32768]");
        assertThatThrownBy(() -> placement.ownerOf(0, 32769))
                .hasMessage("shard count 32769 out of range [1, 32768]");
        assertThatThrownBy(() -> ShardPlacement.of(List.of()))
                .hasMessage("a placement needs at least one node");
        assertThatThrownBy(() -> ShardPlacement.of(List.of("a", "b", "a")))
                .hasMessage("node name 'a' given twice");
    }
}
