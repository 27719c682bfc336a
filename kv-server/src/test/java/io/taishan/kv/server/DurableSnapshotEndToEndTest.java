package io.taishan.kv.server;

import static io.taishan.kv.server.DurableNode.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableFile;
import io.taishan.kv.client.DurableRestore;
import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.proto.ErrorCode;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshots copied into checkpoint storage ({@code file://}) by a real node and restored from there
 * through the client: the copies are what the node reports; a later snapshot reuses the unchanged
 * files it is allowed to and copies the others again; a node whose disk was lost restores every key
 * exactly, downloading, while a node that holds the snapshot downloads nothing; a clone into
 * another table on an empty node; a copy that is corrupt or missing fails the restore naming it and
 * changes nothing; a node without checkpoint storage says so, unless it holds the snapshot.
 */
class DurableSnapshotEndToEndTest {
    private static final String TABLE = "t";
    private static final int SHARDS = 8;

    @TempDir Path tmp;

    private String shared() {
        return tmp.resolve("checkpoints/shared").toUri().toString();
    }

    private String exclusive(long checkpoint) {
        return tmp.resolve("checkpoints/chk-" + checkpoint).toUri().toString();
    }

    private static int[] all() {
        return IntStream.range(0, SHARDS).toArray();
    }

    /** A restore of every shard {@code snapshot} holds, from the cut that holds it. */
    static List<ShardRestore> restores(String source, long snapshotId, DurableSnapshot snapshot) {
        List<ShardRestore> restores = new ArrayList<>();
        for (DurableCut cut : snapshot.cuts()) {
            for (int shard : cut.shards()) {
                restores.add(new ShardRestore(shard, source, snapshotId, cut.cutId()));
            }
        }
        restores.sort((a, b) -> Integer.compare(a.shard(), b.shard()));
        return restores;
    }

    private static List<ShardLease> leases(DurableRestore restored) {
        return restored.leases();
    }

    @Test
    void theCopiesAreWhatTheNodeReportsAndALaterSnapshotReusesWhatItMay() throws Exception {
        try (DurableNode node = new DurableNode(tmp.resolve("n"), DurableNode.fileStorage());
                KvStore kv = node.connect()) {
            kv.createTable(TABLE, SHARDS);
            List<ShardLease> leases = kv.openShards(TABLE, all(), "w1", false);
            DurableNode.Model model = new DurableNode.Model(1);
            model.write(kv, leases, 200, 100);
            kv.snapshot(leases, 1, false);
            KvStore.Durable durable = kv.durable().orElseThrow();

            DurableSnapshot first =
                    durable.uploadSnapshot(TABLE, 1, all(), shared(), exclusive(1), Set.of());

            // One writer's shards are one store: one cut holds them all.
            assertThat(first.cuts()).hasSize(1);
            DurableCut cut1 = first.cuts().get(0);
            assertThat(cut1.shards()).containsExactlyInAnyOrderElementsOf(boxed(all()));
            assertThat(cut1.files()).isNotEmpty().allMatch(f -> f.name().endsWith(".sst"));
            assertThat(Path.of(URI.create(cut1.metadataPack().path())).getParent())
                    .isEqualTo(tmp.resolve("checkpoints/chk-1"));
            assertThat(cut1.files())
                    .allMatch(
                            f ->
                                    Path.of(URI.create(f.path()))
                                            .getParent()
                                            .equals(tmp.resolve("checkpoints/shared")));
            long written = 0;
            for (DurableFile f : withPack(cut1)) {
                assertCopy(f);
                written += f.sizeBytes();
            }
            assertThat(first.uploadedBytes()).isEqualTo(written);

            // The same cut again: the same id; nothing allowed, so every file copied anew.
            DurableSnapshot again =
                    durable.uploadSnapshot(TABLE, 1, all(), shared(), exclusive(2), Set.of());
            assertThat(again.cuts().get(0).cutId()).isEqualTo(cut1.cutId());
            assertThat(paths(again.cuts().get(0))).doesNotContainAnyElementsOf(paths(cut1));

            model.write(kv, leases, 50, 100);
            kv.snapshot(leases, 2, false);
            Set<String> allowed = new HashSet<>(paths(cut1));
            DurableSnapshot second =
                    durable.uploadSnapshot(TABLE, 2, all(), shared(), exclusive(3), allowed);

            DurableCut cut2 = second.cuts().get(0);
            assertThat(cut2.cutId()).isNotEqualTo(cut1.cutId());
            List<DurableFile> reused =
                    cut2.files().stream().filter(f -> allowed.contains(f.path())).toList();
            List<DurableFile> fresh =
                    cut2.files().stream().filter(f -> !allowed.contains(f.path())).toList();
            // The first cut's SSTs are still live (no compaction yet) and referenced, not copied.
            assertThat(reused)
                    .extracting(DurableFile::name)
                    .containsExactlyInAnyOrderElementsOf(names(cut1));
            assertThat(fresh).isNotEmpty();
            long freshBytes = cut2.metadataPack().sizeBytes();
            for (DurableFile f : fresh) {
                assertCopy(f);
                freshBytes += f.sizeBytes();
            }
            assertThat(second.uploadedBytes()).isEqualTo(freshBytes);

            // The same snapshot where those copies are not allowed: all of it copied again.
            DurableSnapshot full =
                    durable.uploadSnapshot(TABLE, 2, all(), shared(), exclusive(4), Set.of());
            assertThat(full.cuts().get(0).cutId()).isEqualTo(cut2.cutId());
            assertThat(paths(full.cuts().get(0))).doesNotContainAnyElementsOf(allowed);
            assertThat(full.uploadedBytes()).isGreaterThan(second.uploadedBytes());
        }
    }

    @Test
    void aNodeThatLostItsDiskRestoresEveryKeyFromCheckpointStorage() throws Exception {
        try (DurableNode node = new DurableNode(tmp.resolve("n"), DurableNode.fileStorage())) {
            DurableNode.Model model = new DurableNode.Model(2);
            Map<Integer, TreeMap<String, String>> atSnapshot;
            DurableSnapshot snapshot;
            try (KvStore kv = node.connect()) {
                kv.createTable(TABLE, SHARDS);
                // Two writers: two stores, two cuts.
                List<ShardLease> a = kv.openShards(TABLE, new int[] {0, 1, 2, 3}, "w1", false);
                List<ShardLease> b = kv.openShards(TABLE, new int[] {4, 5, 6, 7}, "w2", false);
                model.write(kv, a, 300, 200);
                model.write(kv, b, 300, 200);
                kv.snapshot(a, 7, false);
                kv.snapshot(b, 7, false);
                atSnapshot = model.copy();
                snapshot =
                        kv.durable()
                                .orElseThrow()
                                .uploadSnapshot(TABLE, 7, all(), shared(), exclusive(7), Set.of());
                assertThat(snapshot.cuts()).hasSize(2);
                model.write(kv, a, 100, 200); // after the snapshot: must not come back

                // While the node holds the snapshot, naming the durable cuts downloads nothing.
                DurableRestore held =
                        kv.durable()
                                .orElseThrow()
                                .restoreShards(
                                        TABLE, "w3", restores(TABLE, 7, snapshot), snapshot.cuts());
                assertThat(held.downloadedBytes()).isZero();
                assertThat(read(kv, held.leases())).isEqualTo(atSnapshot);
            }

            node.loseDiskAndRestart();

            try (KvStore kv = node.connect()) {
                kv.createTable(TABLE, SHARDS);
                DurableRestore restored =
                        kv.durable()
                                .orElseThrow()
                                .restoreShards(
                                        TABLE, "w1", restores(TABLE, 7, snapshot), snapshot.cuts());

                assertThat(restored.downloadedBytes()).isPositive();
                assertThat(node.downloadedBytes()).isEqualTo(restored.downloadedBytes());
                assertThat(read(kv, leases(restored))).isEqualTo(atSnapshot);

                // Now it holds them: a second restore (a failover) takes them from its disk.
                DurableRestore failover =
                        kv.durable()
                                .orElseThrow()
                                .restoreShards(
                                        TABLE, "w1", restores(TABLE, 7, snapshot), snapshot.cuts());
                assertThat(failover.downloadedBytes()).isZero();
                assertThat(read(kv, failover.leases())).isEqualTo(atSnapshot);
                // The rollback dropped the snapshots above 7; the fetched one stays.
                assertThat(kv.listSnapshots(TABLE))
                        .extracting(s -> s.snapshotId())
                        .containsOnly(7L);
            }
            // And after a restart: recorded durably.
            node.stop();
            node.start();
            try (KvStore kv = node.connect()) {
                DurableRestore afterRestart =
                        kv.durable()
                                .orElseThrow()
                                .restoreShards(
                                        TABLE, "w1", restores(TABLE, 7, snapshot), snapshot.cuts());
                assertThat(afterRestart.downloadedBytes()).isZero();
                assertThat(read(kv, afterRestart.leases())).isEqualTo(atSnapshot);

                // The next checkpoint references the fetched files instead of copying them again
                // (where allowed), those RocksDB did not rewrite since (a compaction gives its
                // output new names): the fetched cuts and the stores forked from them know their
                // copies.
                new DurableNode.Model(9).write(kv, afterRestart.leases().subList(0, 1), 10, 200);
                kv.snapshot(afterRestart.leases(), 8, false);
                Set<String> allowed = new HashSet<>();
                snapshot.cuts().forEach(c -> allowed.addAll(paths(c)));
                DurableSnapshot next =
                        kv.durable()
                                .orElseThrow()
                                .uploadSnapshot(TABLE, 8, all(), shared(), exclusive(8), allowed);
                Map<String, DurableFile> fetched = new HashMap<>();
                snapshot.cuts()
                        .forEach(
                                c ->
                                        c.files()
                                                .forEach(
                                                        f ->
                                                                fetched.put(
                                                                        f.name()
                                                                                + "/"
                                                                                + f.sizeBytes(),
                                                                        f)));
                int reused = 0;
                for (DurableCut cut : next.cuts()) {
                    for (DurableFile f : cut.files()) {
                        DurableFile same = fetched.get(f.name() + "/" + f.sizeBytes());
                        if (same != null) {
                            assertThat(f.path()).as(f.name()).isEqualTo(same.path());
                            reused++;
                        }
                    }
                }
                assertThat(reused).isPositive();
                // The store that had no write since the restore is the fetched cut itself.
                assertThat(next.cuts())
                        .extracting(DurableCut::cutId)
                        .containsAnyElementsOf(
                                snapshot.cuts().stream().map(DurableCut::cutId).toList());
            }
            assertThat(tmpEntries(node)).isEmpty();
        }
    }

    /**
     * A shard with no write since the last checkpoint keeps its snapshot in the older cut, so one
     * store's shards come from two cuts that share most files (the newer one references the older
     * one's copies). Restored at once by two writers, as a rescale's subtasks do, the node
     * downloads each copy once and links it into both cuts, not the store twice.
     */
    @Test
    void cutsThatShareCopiesDownloadEachCopyOnce() throws Exception {
        try (DurableNode node = new DurableNode(tmp.resolve("n"), DurableNode.fileStorage())) {
            DurableNode.Model model = new DurableNode.Model(8);
            DurableSnapshot second;
            Map<Integer, TreeMap<String, String>> atSnapshot;
            try (KvStore kv = node.connect()) {
                kv.createTable(TABLE, SHARDS);
                List<ShardLease> leases = kv.openShards(TABLE, all(), "w", false);
                model.write(kv, leases, 400, 200);
                kv.snapshot(leases, 1, false);
                KvStore.Durable durable = kv.durable().orElseThrow();
                DurableSnapshot first =
                        durable.uploadSnapshot(TABLE, 1, all(), shared(), exclusive(1), Set.of());
                model.write(kv, leases.subList(0, SHARDS / 2), 50, 200);
                // The idle half first: still its first cut's; then the written half: a new cut.
                kv.snapshot(leases.subList(SHARDS / 2, SHARDS), 2, false);
                kv.snapshot(leases.subList(0, SHARDS / 2), 2, false);
                atSnapshot = model.copy();
                second =
                        durable.uploadSnapshot(
                                TABLE,
                                2,
                                all(),
                                shared(),
                                exclusive(2),
                                new HashSet<>(paths(first.cuts().get(0))));
            }
            assertThat(second.cuts()).as("the idle shards' older cut and a new one").hasSize(2);
            Map<String, Long> copies = new HashMap<>();
            for (DurableCut cut : second.cuts()) {
                withPack(cut).forEach(f -> copies.put(f.path(), f.sizeBytes()));
            }
            long namedBytes = 0;
            for (DurableCut cut : second.cuts()) {
                for (DurableFile f : withPack(cut)) {
                    namedBytes += f.sizeBytes();
                }
            }
            long distinctBytes = copies.values().stream().mapToLong(Long::longValue).sum();
            assertThat(distinctBytes).as("copies both cuts name").isLessThan(namedBytes);

            node.loseDiskAndRestart();

            try (KvStore kv = node.connect()) {
                kv.createTable(TABLE, SHARDS);
                List<ShardRestore> all = restores(TABLE, 2, second);
                KvStore.Durable durable = kv.durable().orElseThrow();
                List<CompletableFuture<DurableRestore>> restoring = new ArrayList<>();
                for (DurableCut cut : second.cuts()) {
                    List<ShardRestore> part =
                            all.stream().filter(r -> cut.shards().contains(r.shard())).toList();
                    restoring.add(
                            CompletableFuture.supplyAsync(
                                    () ->
                                            durable.restoreShards(
                                                    TABLE,
                                                    "w" + cut.cutId(),
                                                    part,
                                                    second.cuts())));
                }
                long downloaded = 0;
                List<ShardLease> restored = new ArrayList<>();
                for (CompletableFuture<DurableRestore> r : restoring) {
                    downloaded += r.join().downloadedBytes();
                    restored.addAll(r.join().leases());
                }

                assertThat(downloaded).isEqualTo(distinctBytes);
                assertThat(node.downloadedBytes()).isEqualTo(distinctBytes);
                assertThat(read(kv, restored)).isEqualTo(atSnapshot);
            }
            assertThat(tmpEntries(node)).isEmpty();
        }
    }

    @Test
    void anEmptyNodeClonesFromADurableCutIntoAnotherTable() throws Exception {
        DurableSnapshot snapshot;
        Map<Integer, TreeMap<String, String>> atSnapshot;
        try (DurableNode source = new DurableNode(tmp.resolve("a"), DurableNode.fileStorage());
                KvStore kv = source.connect()) {
            kv.createTable(TABLE, SHARDS);
            List<ShardLease> leases = kv.openShards(TABLE, all(), "w", false);
            DurableNode.Model model = new DurableNode.Model(3);
            model.write(kv, leases, 100, 50);
            kv.snapshot(leases, 3, true);
            atSnapshot = model.copy();
            snapshot =
                    kv.durable()
                            .orElseThrow()
                            .uploadSnapshot(TABLE, 3, all(), shared(), exclusive(3), Set.of());
        }
        try (DurableNode empty = new DurableNode(tmp.resolve("b"), DurableNode.fileStorage());
                KvStore kv = empty.connect()) {
            kv.createTable("copy", SHARDS);

            DurableRestore cloned =
                    kv.durable()
                            .orElseThrow()
                            .restoreShards(
                                    "copy", "w", restores(TABLE, 3, snapshot), snapshot.cuts());

            assertThat(cloned.downloadedBytes()).isPositive();
            assertThat(cloned.leases()).allMatch(l -> l.table().equals("copy"));
            assertThat(read(kv, cloned.leases())).isEqualTo(atSnapshot);
            // The source table was made here to hold the fetched snapshot, with its shard count.
            assertThat(kv.describeTable(TABLE).orElseThrow().shardCount()).isEqualTo(SHARDS);
            assertThat(kv.listSnapshots(TABLE)).hasSize(SHARDS);
        }
    }

    @Test
    void aCorruptOrMissingCopyFailsTheRestoreNamingItAndChangesNothing() throws Exception {
        DurableSnapshot snapshot;
        try (DurableNode source = new DurableNode(tmp.resolve("a"), DurableNode.fileStorage());
                KvStore kv = source.connect()) {
            kv.createTable(TABLE, SHARDS);
            List<ShardLease> leases = kv.openShards(TABLE, all(), "w", false);
            new DurableNode.Model(4).write(kv, leases, 100, 50);
            kv.snapshot(leases, 4, false);
            snapshot =
                    kv.durable()
                            .orElseThrow()
                            .uploadSnapshot(TABLE, 4, all(), shared(), exclusive(4), Set.of());
        }
        DurableFile victim = snapshot.cuts().get(0).files().get(0);
        Path copy = Path.of(URI.create(victim.path()));
        byte[] original = Files.readAllBytes(copy);
        try (DurableNode node = new DurableNode(tmp.resolve("b"), DurableNode.fileStorage());
                KvStore kv = node.connect()) {
            kv.createTable("live", SHARDS);
            List<ShardLease> live = kv.openShards("live", all(), "w", false);
            DurableNode.Model model = new DurableNode.Model(5);
            model.write(kv, live, 20, 10);
            Map<Integer, TreeMap<String, String>> before = model.copy();
            KvStore.Durable durable = kv.durable().orElseThrow();

            byte[] altered = original.clone();
            altered[altered.length / 2] ^= 1;
            Files.write(copy, altered);
            assertThatThrownBy(
                            () ->
                                    durable.restoreShards(
                                            "live",
                                            "w2",
                                            restores(TABLE, 4, snapshot),
                                            snapshot.cuts()))
                    .isInstanceOf(KvException.class)
                    .hasMessageContaining(victim.path() + " is corrupt")
                    .extracting(e -> ((KvException) e).code())
                    .isEqualTo(ErrorCode.STORAGE_ERROR);

            Files.delete(copy);
            assertThatThrownBy(
                            () ->
                                    durable.restoreShards(
                                            "live",
                                            "w2",
                                            restores(TABLE, 4, snapshot),
                                            snapshot.cuts()))
                    .isInstanceOf(KvException.class)
                    .hasMessageContaining(victim.path() + " (" + victim.name() + ") is missing");

            // The old leases still hold, over what they held; nothing was fetched or made.
            assertThat(read(kv, live)).isEqualTo(before);
            assertThat(kv.describeTable(TABLE)).isEmpty();
            assertThat(tmpEntries(node)).isEmpty();

            // Once the copy is back, the same restore goes through.
            Files.write(copy, original);
            DurableRestore restored =
                    durable.restoreShards(
                            "live", "w2", restores(TABLE, 4, snapshot), snapshot.cuts());
            assertThat(restored.downloadedBytes()).isPositive();
        }
    }

    @Test
    void aNodeWithoutCheckpointStorageSaysSoUnlessItHoldsTheSnapshot() throws Exception {
        DurableSnapshot snapshot;
        try (DurableNode source = new DurableNode(tmp.resolve("a"), DurableNode.fileStorage());
                KvStore kv = source.connect()) {
            kv.createTable(TABLE, SHARDS);
            List<ShardLease> leases = kv.openShards(TABLE, all(), "w", false);
            new DurableNode.Model(6).write(kv, leases, 10, 10);
            kv.snapshot(leases, 6, false);
            snapshot =
                    kv.durable()
                            .orElseThrow()
                            .uploadSnapshot(TABLE, 6, all(), shared(), exclusive(6), Set.of());
        }
        try (DurableNode plain = new DurableNode(tmp.resolve("b"), null);
                KvStore kv = plain.connect()) {
            kv.createTable(TABLE, SHARDS);
            List<ShardLease> leases = kv.openShards(TABLE, all(), "w", false);
            Map<Integer, TreeMap<String, String>> model;
            DurableNode.Model writes = new DurableNode.Model(7);
            writes.write(kv, leases, 10, 10);
            model = writes.copy();
            kv.snapshot(leases, 1, false);
            KvStore.Durable durable = kv.durable().orElseThrow();

            assertThatThrownBy(
                            () ->
                                    durable.uploadSnapshot(
                                            TABLE, 1, all(), shared(), exclusive(1), Set.of()))
                    .isInstanceOf(KvException.class)
                    .hasMessageContaining("durable.enabled")
                    .extracting(e -> ((KvException) e).code())
                    .isEqualTo(ErrorCode.DURABLE_DISABLED);
            assertThatThrownBy(
                            () ->
                                    durable.restoreShards(
                                            TABLE,
                                            "w2",
                                            restores(TABLE, 6, snapshot),
                                            snapshot.cuts()))
                    .isInstanceOf(KvException.class)
                    .hasMessageContaining("must be fetched from checkpoint storage")
                    .hasMessageContaining("durable.enabled is off")
                    .extracting(e -> ((KvException) e).code())
                    .isEqualTo(ErrorCode.DURABLE_DISABLED);
            assertThat(read(kv, leases)).isEqualTo(model);

            // Snapshot 1 is on this node: named with a durable cut, it is taken from the disk.
            List<ShardRestore> held = new ArrayList<>();
            for (int s : all()) {
                held.add(new ShardRestore(s, TABLE, 1, snapshot.cuts().get(0).cutId()));
            }
            DurableRestore restored = durable.restoreShards(TABLE, "w2", held, snapshot.cuts());
            assertThat(restored.downloadedBytes()).isZero();
            assertThat(read(kv, restored.leases())).isEqualTo(model);
        }
    }

    /** The copy is there with the reported size and CRC32C. */
    static void assertCopy(DurableFile file) throws IOException {
        byte[] bytes = Files.readAllBytes(Path.of(URI.create(file.path())));
        assertThat(bytes.length).as(file.path()).isEqualTo(file.sizeBytes());
        CRC32C crc = new CRC32C();
        crc.update(bytes);
        assertThat((int) crc.getValue()).as(file.path()).isEqualTo(file.crc32c());
    }

    private static List<DurableFile> withPack(DurableCut cut) {
        List<DurableFile> all = new ArrayList<>(cut.files());
        all.add(cut.metadataPack());
        return all;
    }

    private static List<String> paths(DurableCut cut) {
        return withPack(cut).stream().map(DurableFile::path).toList();
    }

    private static List<String> names(DurableCut cut) {
        return cut.files().stream().map(DurableFile::name).toList();
    }

    private static List<Integer> boxed(int[] shards) {
        return IntStream.of(shards).boxed().toList();
    }

    static List<Path> tmpEntries(DurableNode node) throws IOException {
        try (Stream<Path> list = Files.list(node.dataDir().resolve("tmp"))) {
            return list.toList();
        }
    }
}
