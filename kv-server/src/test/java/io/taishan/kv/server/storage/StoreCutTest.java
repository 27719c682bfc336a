package io.taishan.kv.server.storage;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class StoreCutTest {

    /**
     * After scattered changes a cut's filter holders are thousands of runs (each changed shard in
     * the new cut, its neighbours in older ones); every shard must still find its holder, and a
     * shard without a filter none.
     */
    @Test
    void everyShardFindsTheCutHoldingItsFilter() {
        Random random = new Random(7);
        Map<Integer, Long> expected = new HashMap<>();
        StoreCut.FilterRunsBuilder runs = new StoreCut.FilterRunsBuilder();
        for (int shard = 0; shard < 32_768; shard++) {
            int kind = random.nextInt(10);
            if (kind == 0) {
                continue; // no filter it can vouch for
            }
            long holder = kind < 3 ? 9 : kind < 6 ? 4 : 2;
            runs.add(shard, holder);
            expected.put(shard, holder);
        }
        StoreCut cut = new StoreCut(9, 1, 0, 0, 0, runs.build());
        assertThat(cut.filterHolders().size()).isGreaterThan(5_000);
        for (int shard = -1; shard <= 32_768; shard++) {
            assertThat(cut.filterHolder(shard)).isEqualTo(expected.getOrDefault(shard, -1L));
        }
        assertThat(
                        new StoreCut(1, 1, 0, 0, 0, new StoreCut.FilterRunsBuilder().build())
                                .filterHolder(0))
                .isEqualTo(-1);
    }
}
