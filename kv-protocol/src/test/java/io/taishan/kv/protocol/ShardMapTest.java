package io.taishan.kv.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ShardMapTest {

    @ParameterizedTest(name = "{0} shards on {1} nodes")
    @CsvSource({"1,1", "8,1", "8,3", "128,3", "128,7", "3,3", "2,5", "32768,7", "32768,32768"})
    void everyShardHasOneNodeInContiguousBalancedRanges(int shardCount, int nodeCount) {
        int[] perNode = new int[nodeCount];
        int previous = 0;
        for (int shard = 0; shard < shardCount; shard++) {
            int node = ShardMap.nodeOf(shard, shardCount, nodeCount);
            assertThat(node).isBetween(0, nodeCount - 1);
            // Contiguous: the owner never goes back, so each node holds one range.
            assertThat(node).isGreaterThanOrEqualTo(previous);
            previous = node;
            perNode[node]++;
        }
        int total = 0;
        for (int count : perNode) {
            total += count;
            assertThat(count)
                    .isBetween(shardCount / nodeCount, (shardCount + nodeCount - 1) / nodeCount);
        }
        assertThat(total).isEqualTo(shardCount);
        assertThat(ShardMap.nodeOf(0, shardCount, nodeCount)).isZero();
        if (shardCount >= nodeCount) {
            assertThat(ShardMap.nodeOf(shardCount - 1, shardCount, nodeCount))
                    .isEqualTo(nodeCount - 1);
        }
    }

    @ParameterizedTest
    @CsvSource({"-1,8", "8,8", "100,8"})
    void shardOutOfRangeIsRejected(int shard, int shardCount) {
        assertThatThrownBy(() -> ShardMap.nodeOf(shard, shardCount, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("out of range");
    }
}
