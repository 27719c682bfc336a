package io.taishan.kv.server;

import static io.taishan.kv.server.DurableNode.read;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.DurableRestore;
import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.server.storage.SnapshotCacheOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With durable checkpoints a node's snapshots are a cache of the copies in checkpoint storage: per
 * shard the newest uploaded ones keep their files, older ones become records of what only
 * checkpoint storage holds (and restore from there, downloading), aborted ones go, one under way
 * stays; a stopped job's table ends with no snapshot files at all; a table without durable
 * checkpoints keeps every snapshot, however old.
 */
class LocalSnapshotCacheTest {
    private static final String TABLE = "t";
    private static final int SHARDS = 8;

    @TempDir Path tmp;

    @Test
    void theNewestUploadedSnapshotsStayLocalOlderOnesRestoreByDownload() throws Exception {
        SnapshotCacheOptions cache = new SnapshotCacheOptions(2, Duration.ofHours(1));
        try (DurableNode node =
                        new DurableNode(tmp.resolve("n"), DurableNode.fileStorage(), cache);
                KvStore kv = node.connect()) {
            kv.createTable(TABLE, SHARDS);
            List<ShardLease> leases = kv.openShards(TABLE, all(), "w1", false);
            KvStore.Durable durable = kv.durable().orElseThrow();
            DurableNode.Model model = new DurableNode.Model(3);
            for (long id = 1; id <= 5; id++) {
                model.write(kv, leases, 50, 100);
                kv.snapshot(leases, id, false);
                durable.uploadSnapshot(TABLE, id, all(), shared(), chk(id), Set.of());
            }
            assertThat(where(kv))
                    .isEqualTo(
                            Map.of(
                                    1L, "storage", 2L, "storage", 3L, "storage", 4L, "both", 5L,
                                    "both"));
            assertThat(cutDirs(node)).isEqualTo(2);

            // 6 is aborted (never uploaded), 7 completes: 6 goes whole, 5 loses its local copy.
            model.write(kv, leases, 50, 100);
            kv.snapshot(leases, 6, false);
            model.write(kv, leases, 50, 100);
            kv.snapshot(leases, 7, false);
            durable.uploadSnapshot(TABLE, 7, all(), shared(), chk(7), Set.of());
            // 8 is under way: its upload has not finished, so it stays as it is.
            model.write(kv, leases, 50, 100);
            kv.snapshot(leases, 8, false);
            assertThat(where(kv))
                    .isEqualTo(
                            Map.of(
                                    1L, "storage", 2L, "storage", 3L, "storage", 4L, "storage", 5L,
                                    "both", 7L, "both", 8L, "local"));
            assertThat(cutDirs(node)).isEqualTo(3);
        }
        // What is where survives a restart.
        try (DurableNode node = reopen(cache);
                KvStore kv = node.connect()) {
            assertThat(where(kv)).containsEntry(3L, "storage").containsEntry(8L, "local");
        }
    }

    @Test
    void anEvictedSnapshotRestoresExactlyByDownloadAndTheJobsDropsRemoveItsRecord()
            throws Exception {
        SnapshotCacheOptions cache = new SnapshotCacheOptions(1, Duration.ofHours(1));
        try (DurableNode node =
                        new DurableNode(tmp.resolve("n"), DurableNode.fileStorage(), cache);
                KvStore kv = node.connect()) {
            kv.createTable(TABLE, SHARDS);
            List<ShardLease> leases = kv.openShards(TABLE, all(), "w1", false);
            KvStore.Durable durable = kv.durable().orElseThrow();
            DurableNode.Model model = new DurableNode.Model(4);
            model.write(kv, leases, 200, 100);
            kv.snapshot(leases, 1, false);
            Map<Integer, TreeMap<String, String>> atOne = model.copy();
            DurableSnapshot one =
                    durable.uploadSnapshot(TABLE, 1, all(), shared(), chk(1), Set.of());
            for (long id = 2; id <= 3; id++) {
                model.write(kv, leases, 50, 100);
                kv.snapshot(leases, id, false);
                durable.uploadSnapshot(TABLE, id, all(), shared(), chk(id), Set.of());
            }
            assertThat(where(kv)).isEqualTo(Map.of(1L, "storage", 2L, "storage", 3L, "both"));

            // The job's watermark drop removes records as it removes snapshots.
            assertThat(kv.dropSnapshotsBelow(TABLE, 2)).isEqualTo(SHARDS);
            assertThat(where(kv)).isEqualTo(Map.of(2L, "storage", 3L, "both"));

            // A restore of 1 (say a retained checkpoint) downloads, exactly.
            DurableRestore restored =
                    durable.restoreShards(
                            TABLE,
                            "w2",
                            DurableSnapshotEndToEndTest.restores(TABLE, 1, one),
                            one.cuts());
            assertThat(restored.downloadedBytes()).isPositive();
            assertThat(read(kv, restored.leases())).isEqualTo(atOne);
        }
    }

    @Test
    void aStoppedJobsTableEndsWithNoSnapshotFilesButOneWithoutDurableCheckpointsKeepsThem()
            throws Exception {
        SnapshotCacheOptions cache = new SnapshotCacheOptions(2, Duration.ofSeconds(2));
        try (DurableNode node =
                        new DurableNode(tmp.resolve("n"), DurableNode.fileStorage(), cache);
                KvStore kv = node.connect()) {
            kv.createTable(TABLE, SHARDS);
            kv.createTable("plain", SHARDS);
            List<ShardLease> leases = kv.openShards(TABLE, all(), "w1", false);
            List<ShardLease> plain = kv.openShards("plain", all(), "w1", false);
            DurableNode.Model model = new DurableNode.Model(5);
            model.write(kv, leases, 50, 100);
            model.write(kv, plain, 50, 100);
            kv.snapshot(leases, 1, false);
            kv.snapshot(plain, 1, false);
            kv.durable().orElseThrow().uploadSnapshot(TABLE, 1, all(), shared(), chk(1), Set.of());
            assertThat(where(kv)).isEqualTo(Map.of(1L, "both"));

            // Nobody uploads any more (the job was cancelled); the node's own sweep ages it out.
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!where(kv).equals(Map.of(1L, "storage")) && System.nanoTime() < deadline) {
                Thread.sleep(200);
            }
            assertThat(where(kv)).isEqualTo(Map.of(1L, "storage"));
            assertThat(cutDirs(node)).isZero();
            assertThat(kv.listSnapshots("plain"))
                    .hasSize(SHARDS)
                    .allMatch(s -> s.local() && !s.inCheckpointStorage());
        }
    }

    // ---- helpers

    private DurableNode reopen(SnapshotCacheOptions cache) {
        return new DurableNode(tmp.resolve("n"), DurableNode.fileStorage(), cache);
    }

    /** Per snapshot id: "local", "both" (local and in checkpoint storage) or "storage". */
    private static Map<Long, String> where(KvStore kv) {
        Map<Long, List<SnapshotInfo>> byId =
                kv.listSnapshots(TABLE).stream()
                        .collect(
                                Collectors.groupingBy(
                                        SnapshotInfo::snapshotId,
                                        TreeMap::new,
                                        Collectors.toList()));
        Map<Long, String> where = new TreeMap<>();
        byId.forEach(
                (id, shards) -> {
                    assertThat(shards).as("shards of snapshot %d", id).hasSize(SHARDS);
                    Set<String> kinds =
                            shards.stream()
                                    .map(
                                            s ->
                                                    !s.local()
                                                            ? "storage"
                                                            : s.inCheckpointStorage()
                                                                    ? "both"
                                                                    : "local")
                                    .collect(Collectors.toSet());
                    assertThat(kinds).as("where the shards of snapshot %d are", id).hasSize(1);
                    where.put(id, kinds.iterator().next());
                });
        return where;
    }

    private static long cutDirs(DurableNode node) throws IOException {
        Path cuts = node.dataDir().resolve("tables").resolve(TABLE).resolve("cuts");
        try (Stream<Path> dirs = Files.list(cuts)) {
            return dirs.filter(p -> !p.getFileName().toString().startsWith(".")).count();
        }
    }

    private String shared() {
        return tmp.resolve("checkpoints/shared").toUri().toString();
    }

    private String chk(long checkpoint) {
        return tmp.resolve("checkpoints/chk-" + checkpoint).toUri().toString();
    }

    private static int[] all() {
        return IntStream.range(0, SHARDS).toArray();
    }
}
