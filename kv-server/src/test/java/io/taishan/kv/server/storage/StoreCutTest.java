package io.taishan.kv.server.storage;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StoreCutTest {
    @TempDir Path dir;

    /**
     * The lineage of a cut's files (what an upload's reuse is keyed by) survives the record; a
     * record written before lineages existed still reads, without one.
     */
    @Test
    void theRecordKeepsTheLineageAndAnOlderRecordReadsWithoutOne() throws Exception {
        StoreCut.FilterRunsBuilder runs = new StoreCut.FilterRunsBuilder();
        runs.add(3, 5);
        StoreCut cut = new StoreCut(5, 2, 1_000, 4_096, 7, runs.build(), "1f0c-lineage");
        Files.write(dir.resolve(StoreCut.FILE_NAME), cut.toBytes());
        assertThat(StoreCut.read(dir)).isEqualTo(cut);

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(0x54534354);
            out.writeInt(1);
            out.writeLong(4);
            out.writeInt(2);
            out.writeLong(900);
            out.writeLong(2_048);
            out.writeInt(6);
            out.writeInt(1);
            out.writeInt(0);
            out.writeInt(8);
            out.writeLong(4);
        }
        Files.write(dir.resolve(StoreCut.FILE_NAME), bytes.toByteArray());
        assertThat(StoreCut.read(dir))
                .isEqualTo(
                        new StoreCut(
                                4,
                                2,
                                900,
                                2_048,
                                6,
                                List.of(new StoreCut.FilterRun(0, 8, 4)),
                                null));
    }

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
        StoreCut cut = new StoreCut(9, 1, 0, 0, 0, runs.build(), "lineage");
        assertThat(cut.filterHolders().size()).isGreaterThan(5_000);
        for (int shard = -1; shard <= 32_768; shard++) {
            assertThat(cut.filterHolder(shard)).isEqualTo(expected.getOrDefault(shard, -1L));
        }
        assertThat(
                        new StoreCut(1, 1, 0, 0, 0, new StoreCut.FilterRunsBuilder().build(), null)
                                .filterHolder(0))
                .isEqualTo(-1);
    }
}
