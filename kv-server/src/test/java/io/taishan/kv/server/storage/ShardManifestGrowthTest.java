package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.marker;
import static io.taishan.kv.server.storage.Ops.put;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A shard checkpointed many times keeps a small MANIFEST. Every snapshot flushes the shard and
 * every flush appends a version edit; each snapshot copies the MANIFEST. Before the limit ({@link
 * RocksResources#MAX_MANIFEST_BYTES}) it grew for ever (RocksDB's default rewrites it at 1 GiB), in
 * the live shard and in every snapshot: this test without the limit failed with 115 KiB after 600
 * checkpoints (194 KiB after 1,000), where with it 55 KiB remain. Found by the soak (docs/soak.md).
 */
class ShardManifestGrowthTest {
    private static final int CHECKPOINTS = 600;

    /**
     * A rolled MANIFEST starts with the live version, a few KiB; then edits again up to the limit.
     */
    private static final long MAX_BYTES = RocksResources.MAX_MANIFEST_BYTES + (16 << 10);

    @TempDir Path dir;

    @Test
    void sixHundredCheckpointsLeaveASmallManifest() throws Exception {
        try (StorageEngine engine = StorageEngine.open(Ops.smallOptions(dir))) {
            engine.createTable("t", 1, false);
            Shard shard = engine.tableStore("t").shard(0);
            long epoch = shard.open();
            for (int id = 1; id <= CHECKPOINTS; id++) {
                shard.write(epoch, List.of(put("k" + (id % 50), "v" + id)));
                shard.write(epoch, List.of(marker(id, false)));
                // As the backend releases subsumed checkpoints: one retained.
                shard.dropSnapshotsBelow(id);
            }
            long live = largestManifest(dir, "live");
            long inSnapshot = largestManifest(dir, "cuts");
            System.out.printf(
                    "after %d checkpoints: live MANIFEST %d KiB, in the snapshot %d KiB%n",
                    CHECKPOINTS, live >> 10, inSnapshot >> 10);
            assertThat(live).isLessThanOrEqualTo(MAX_BYTES);
            assertThat(inSnapshot).isLessThanOrEqualTo(MAX_BYTES);
        }
    }

    /** The largest MANIFEST file under a directory named {@code under}. */
    private static long largestManifest(Path root, String under) throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> p.getFileName().toString().startsWith("MANIFEST-"))
                    .filter(p -> p.toString().contains("/" + under + "/"))
                    .mapToLong(p -> p.toFile().length())
                    .max()
                    .orElseThrow(() -> new AssertionError("no MANIFEST under " + under));
        }
    }
}
