package io.taishan.kv.server.storage;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.WriteBatch;

class RangeDbTest {
    @TempDir Path dir;

    /**
     * Opening a store of many shards asks which of them hold keys; one iterator answers for all,
     * and must agree with asking each shard on its own, whatever the pattern of full and empty
     * ranges (the last shard, 32,767, included).
     */
    @Test
    void shardsWithKeysAgreesWithAskingEachShard() throws Exception {
        Random random = new Random(42);
        try (RocksResources resources = new RocksResources(Ops.smallOptions(dir), false);
                RangeDb db = RangeDb.open(resources, dir.resolve("db"))) {
            BitSet empty = new BitSet();
            empty.set(0, 32_768);
            assertThat(db.shardsWithKeys(empty).isEmpty()).isTrue();

            BitSet written = new BitSet();
            try (WriteBatch batch = new WriteBatch()) {
                for (int shard : new int[] {0, 1, 2, 700, 701, 9_000, 32_766, 32_767}) {
                    written.set(shard);
                }
                for (int i = 0; i < 200; i++) {
                    written.set(random.nextInt(32_768));
                }
                for (int shard = written.nextSetBit(0);
                        shard >= 0;
                        shard = written.nextSetBit(shard + 1)) {
                    batch.put(RangeDb.key(shard, bytes("k")), bytes("v"));
                }
                db.write(batch);
            }
            for (int round = 0; round < 20; round++) {
                BitSet asked = new BitSet();
                int step = 1 + random.nextInt(50);
                for (int shard = random.nextInt(step); shard < 32_768; shard += step) {
                    asked.set(shard);
                }
                if (round == 0) {
                    asked.set(0, 32_768);
                }
                BitSet expected = new BitSet();
                for (int shard = asked.nextSetBit(0);
                        shard >= 0;
                        shard = asked.nextSetBit(shard + 1)) {
                    if (db.hasKeys(shard)) {
                        expected.set(shard);
                    }
                }
                assertThat(db.shardsWithKeys(asked)).isEqualTo(expected);
            }
            BitSet all = new BitSet();
            all.set(0, 32_768);
            assertThat(db.shardsWithKeys(all)).isEqualTo(written);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
