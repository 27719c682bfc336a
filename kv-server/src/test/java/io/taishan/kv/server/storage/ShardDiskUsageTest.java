package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.marker;
import static io.taishan.kv.server.storage.Ops.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Disk an open shard takes, counted in allocated blocks ({@code du}), not file sizes: RocksDB
 * preallocates its MANIFEST and WAL with fallocate, which file sizes do not show but a full disk
 * does. A 128-shard operator must fit a small disk.
 */
class ShardDiskUsageTest {
    private static final int SHARDS = 64;
    private static final long MAX_BYTES_PER_SHARD = 256 << 10;

    @TempDir Path dir;

    @ParameterizedTest
    @EnumSource(WalMode.class)
    void openShardWithOneSmallWriteTakesLittleDisk(WalMode wal) throws Exception {
        StorageOptions defaults = StorageOptions.defaults(dir);
        StorageOptions options =
                new StorageOptions(
                        dir,
                        wal,
                        defaults.blockCacheBytes(),
                        defaults.writeBufferBytes(),
                        defaults.shardWriteBufferBytes(),
                        defaults.backgroundThreads(),
                        defaults.maxOpenFilesPerShard(),
                        Duration.ofHours(1),
                        Integer.MAX_VALUE);
        long empty = allocatedBytes(dir);
        try (StorageEngine engine = StorageEngine.open(options)) {
            engine.createTable("t", SHARDS, false);
            TableStore table = engine.tableStore("t");
            for (int s = 0; s < SHARDS; s++) {
                ShardStore shard = table.shard(s);
                long epoch = shard.open();
                try (ShardStore.WriteSession w = shard.beginWrite(epoch)) {
                    w.apply(List.of(put("k", "v")));
                    w.apply(List.of(marker(1, false)));
                }
            }
            long perShard = (allocatedBytes(dir) - empty) / SHARDS;
            System.out.printf(
                    "wal=%s: %d open shards, one write and one snapshot each: %d KiB of disk per"
                            + " shard%n",
                    wal, SHARDS, perShard >> 10);
            assertThat(perShard).isLessThan(MAX_BYTES_PER_SHARD);
        }
    }

    private static long allocatedBytes(Path dir) throws IOException, InterruptedException {
        Process du;
        try {
            du = new ProcessBuilder("du", "-s", "-B1", dir.toString()).start();
        } catch (IOException e) {
            assumeTrue(false, "no du on this machine: " + e.getMessage());
            throw e;
        }
        assertThat(du.waitFor(30, TimeUnit.SECONDS)).isTrue();
        String out = new String(du.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assumeTrue(du.exitValue() == 0, "du failed: " + out);
        return Long.parseLong(out.split("\\s+")[0]);
    }
}
