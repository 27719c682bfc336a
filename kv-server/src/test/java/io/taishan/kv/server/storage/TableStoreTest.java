package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.b;
import static io.taishan.kv.server.storage.Ops.marker;
import static io.taishan.kv.server.storage.Ops.put;
import static io.taishan.kv.server.storage.Ops.s;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.WriteOp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shards as key ranges of per-writer stores: what a checkpoint cuts, what a restore forks, and that
 * a restore of some shards never touches the others, whoever owns them.
 */
class TableStoreTest {
    private static final int SHARDS = 128;

    @TempDir Path dir;

    private StorageEngine engine;
    private TableStore table;

    @BeforeEach
    void setUp() {
        engine = StorageEngine.open(Ops.smallOptions(dir));
        engine.createTable("t", SHARDS, false);
        table = engine.tableStore("t");
    }

    @AfterEach
    void tearDown() {
        engine.close();
    }

    /** One subtask: its shards, its lease, its writes. */
    private final class Writer {
        final String name;
        final int[] shards;
        long epoch;

        Writer(String name, int from, int to) {
            this.name = name;
            this.shards = new int[to - from];
            for (int i = 0; i < shards.length; i++) {
                shards[i] = from + i;
            }
        }

        Writer open() {
            epoch = table.openShards(name, shards, false)[0];
            return this;
        }

        /** Puts {@code key = value} into every shard, then markers for {@code checkpoint} if >0. */
        List<List<SnapshotMeta>> write(String key, String value, long checkpoint) {
            List<TableWrite.ShardOps> writes = new ArrayList<>();
            for (int s : shards) {
                List<WriteOp> ops = new ArrayList<>();
                ops.add(put(key, value + "@" + s));
                if (checkpoint > 0) {
                    ops.add(marker(checkpoint, false));
                }
                writes.add(new TableWrite.ShardOps(s, epoch, ops));
            }
            return table.write(writes, x -> null).snapshots();
        }

        void checkpoint(long id) {
            List<long[]> refs = new ArrayList<>();
            for (int s : shards) {
                refs.add(new long[] {s, epoch});
            }
            table.snapshot(refs, id, false);
        }

        Writer restoreFrom(TableStore source, long checkpoint) {
            List<TableStore.Restore> restores = new ArrayList<>();
            for (int s : shards) {
                restores.add(new TableStore.Restore(s, source, checkpoint));
            }
            epoch = table.restoreShards(name, restores, true)[0];
            return this;
        }

        String get(int shard, String key) {
            return s(table.shard(shard).get(epoch, b(key)));
        }

        void assertEvery(String key, String value) {
            for (int s : shards) {
                assertThat(get(s, key)).as("%s in shard %d", key, s).isEqualTo(value + "@" + s);
            }
        }
    }

    private long cuts() throws IOException {
        try (Stream<Path> dirs = Files.list(dir.resolve("tables/t/cuts"))) {
            return dirs.count();
        }
    }

    private long storeDirs() throws IOException {
        try (Stream<Path> dirs = Files.list(dir.resolve("tables/t/stores"))) {
            return dirs.count();
        }
    }

    @Test
    void aWritersCheckpointIsOneCutHoweverManyShardsAndAnUnchangedOneNone() throws IOException {
        Writer w = new Writer("a", 0, SHARDS).open();
        List<List<SnapshotMeta>> taken = w.write("k", "v1", 1);
        assertThat(cuts()).isEqualTo(1);
        assertThat(taken)
                .allSatisfy(
                        t ->
                                assertThat(t)
                                        .singleElement()
                                        .satisfies(
                                                m -> {
                                                    assertThat(m.snapshotId()).isEqualTo(1);
                                                    assertThat(m.reused()).isFalse();
                                                }));
        // One shard changes: one new cut, for every shard of the store.
        table.shard(7).write(w.epoch, List.of(put("k", "changed")));
        w.checkpoint(2);
        assertThat(cuts()).isEqualTo(2);
        // Nothing changes: every shard reuses its cut, and a closed store stays closed.
        engine.closeAllIdleStores();
        w.checkpoint(3);
        assertThat(cuts()).isEqualTo(2);
        assertThat(engine.openStoreCount()).isZero();
        assertThat(table.shard(0).snapshot(3).reused()).isTrue();
    }

    @Test
    void twoMarkersInOneRequestCutTheStoreAtEachOfThem() {
        Writer w = new Writer("a", 0, 4).open();
        List<TableWrite.ShardOps> writes = new ArrayList<>();
        for (int s : w.shards) {
            writes.add(
                    new TableWrite.ShardOps(
                            s,
                            w.epoch,
                            List.of(
                                    put("k", "before"),
                                    marker(1, false),
                                    put("k", "between"),
                                    marker(2, false),
                                    put("k", "after"))));
        }
        table.write(writes, x -> null);
        // 2 first: a restore to 1 drops 2, a lost future.
        Writer two = new Writer("c", 0, 4).restoreFrom(table, 2);
        assertThat(two.get(3, "k")).isEqualTo("between");
        Writer one = new Writer("b", 0, 4).restoreFrom(table, 1);
        assertThat(one.get(3, "k")).isEqualTo("before");
    }

    @Test
    void aRegionFailoverRestoresItsShardsWhileTheOtherWriterGoesOnUntouched() throws Exception {
        Writer a = new Writer("a", 0, 64).open();
        Writer b = new Writer("b", 64, 128).open();
        a.write("k", "a1", 1);
        b.write("k", "b1", 1);
        a.write("k", "a2", 0);
        b.write("k", "b2", 0);

        // b keeps writing (and checkpointing) while a's region restarts from checkpoint 1.
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService bThread = Executors.newSingleThreadExecutor();
        Future<Integer> bWrites =
                bThread.submit(
                        () -> {
                            int n = 0;
                            while (!stop.get()) {
                                n++;
                                b.write("n", "b" + n, n % 5 == 0 ? 100 + n : 0);
                            }
                            return n;
                        });
        Thread.sleep(50);
        Writer a2 = new Writer("a-attempt-2", 0, 64).restoreFrom(table, 1);
        Thread.sleep(50);
        stop.set(true);
        int n = bWrites.get(1, TimeUnit.MINUTES);
        bThread.shutdown();

        a2.assertEvery("k", "a1");
        // b was never fenced, lost nothing and saw no rollback.
        b.assertEvery("k", "b2");
        b.assertEvery("n", "b" + n);
        assertThatThrownBy(() -> a.get(0, "k"))
                .isInstanceOfSatisfying(
                        KvServerException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.FENCED));
        // a's old store emptied and went: a2's fork and b's store remain.
        assertThat(table.stores()).hasSize(2);
    }

    @Test
    void aFullRestoreForksFromCutsByHardLinksAndLeavesNoOldStoreBehind() throws IOException {
        Writer a = new Writer("a", 0, 64).open();
        Writer b = new Writer("b", 64, 128).open();
        a.write("k", "a1", 1);
        b.write("k", "b1", 1);
        a.write("k", "a2", 0);
        b.write("k", "b2", 0);
        assertThat(storeDirs()).isEqualTo(2);

        Writer a2 = new Writer("a2", 0, 64).restoreFrom(table, 1);
        Writer b2 = new Writer("b2", 64, 128).restoreFrom(table, 1);
        a2.assertEvery("k", "a1");
        b2.assertEvery("k", "b1");
        assertThat(table.stores()).hasSize(2);
        assertThat(storeDirs()).isEqualTo(2);
        // The forks share the cuts' SST files: nothing was copied.
        List<Path> ssts;
        try (Stream<Path> files = Files.walk(dir.resolve("tables/t/stores"))) {
            ssts = files.filter(p -> p.toString().endsWith(".sst")).toList();
        }
        assertThat(ssts).isNotEmpty();
        for (Path sst : ssts) {
            assertThat((Integer) Files.getAttribute(sst, "unix:nlink")).isGreaterThanOrEqualTo(2);
        }
    }

    @Test
    void rescale2To4To1RestoresExactlyWithoutMovingData() {
        Writer a = new Writer("a", 0, 64).open();
        Writer b = new Writer("b", 64, 128).open();
        a.write("k", "v1", 1);
        b.write("k", "v1", 1);

        Map<String, Writer> four = new HashMap<>();
        for (int i = 0; i < 4; i++) {
            Writer w = new Writer("four-" + i, i * 32, i * 32 + 32).restoreFrom(table, 1);
            w.assertEvery("k", "v1");
            w.write("k", "v2", 2);
            four.put(w.name, w);
        }
        for (Writer w : four.values()) {
            w.write("k", "lost", 0);
        }
        Writer one = new Writer("one", 0, 128).restoreFrom(table, 2);
        one.assertEvery("k", "v2");
        // The one writer's shards came from four cuts: four forks, all its own.
        assertThat(table.stores()).hasSize(4);
        one.write("k", "v3", 3);
        Writer again = new Writer("one-again", 0, 128).restoreFrom(table, 3);
        again.assertEvery("k", "v3");
    }

    @Test
    void aShardStartedEmptyNeverShowsWhatAForkBroughtOfIt() {
        Writer a = new Writer("a", 0, 128).open();
        a.write("k", "old", 1);
        // b restores only shards 0..9 from the cut, which holds every shard: its fork has data of
        // shards 10..127 as garbage.
        Writer b = new Writer("b", 0, 10).restoreFrom(table, 1);
        b.assertEvery("k", "old");
        // b now starts shard 50 empty (a new attempt that restores nothing into it).
        long epoch = table.openShards("b", new int[] {50}, true)[0];
        assertThat(table.shard(50).get(epoch, b("k"))).isNull();
        assertThat(table.shard(50).snapshots()).isEmpty();
        assertThat(table.shard(50).store()).isSameAs(table.shard(0).store());
    }

    @Test
    void aRestoreNamingMissingSnapshotsChangesNothing() {
        Writer a = new Writer("a", 0, 8).open();
        a.write("k", "v", 1);
        List<TableStore.Restore> restores = new ArrayList<>();
        for (int s = 0; s < 8; s++) {
            restores.add(new TableStore.Restore(s, table, s < 6 ? 1 : 9));
        }
        assertThatThrownBy(() -> table.restoreShards("b", restores, true))
                .isInstanceOfSatisfying(
                        KvServerException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.SNAPSHOT_NOT_FOUND))
                .hasMessageContaining("2 snapshots not found")
                .hasMessageContaining("snapshot 9 of table 't' shard 6")
                .hasMessageContaining("shard 7");
        a.assertEvery("k", "v");
        assertThat(table.stores()).hasSize(1);
    }

    @Test
    void aCloneOfAnotherTableIsTakenWhileItsSourceWritesOn() {
        Writer a = new Writer("a", 0, 16).open();
        a.write("k", "v1", 1);
        engine.createTable("u", SHARDS, false);
        TableStore target = engine.tableStore("u");
        List<TableStore.Restore> restores = new ArrayList<>();
        for (int s = 0; s < 16; s++) {
            restores.add(new TableStore.Restore(s, table, 1));
        }
        long epoch = target.restoreShards("c", restores, true)[0];
        a.write("k", "v2", 2);
        for (int s = 0; s < 16; s++) {
            assertThat(s(target.shard(s).get(epoch, b("k")))).isEqualTo("v1@" + s);
        }
        a.assertEvery("k", "v2");
    }

    @Test
    void droppingSnapshotsDeletesTheCutsNothingReferences() throws IOException {
        Writer a = new Writer("a", 0, 8).open();
        for (long id = 1; id <= 4; id++) {
            a.write("k", "v" + id, id);
        }
        assertThat(cuts()).isEqualTo(4);
        assertThat(table.dropSnapshotsBelow(4, null)).isEqualTo(3 * 8);
        assertThat(cuts()).isEqualTo(1);
        Writer b = new Writer("b", 0, 8).restoreFrom(table, 4);
        b.assertEvery("k", "v4");
    }

    /**
     * One checkpoint of three subtasks is three cuts under one snapshot id; the subtask in the
     * middle drops its part first. The other two must keep theirs (each subtask drops its own
     * subsumed snapshots, in no particular order).
     */
    @Test
    void droppingOneWritersPartOfASnapshotKeepsTheOtherWritersCuts() throws IOException {
        Writer a = new Writer("a", 0, 40).open();
        Writer b = new Writer("b", 40, 80).open();
        Writer c = new Writer("c", 80, 128).open();
        a.write("k", "a1", 1);
        b.write("k", "b1", 1);
        c.write("k", "c1", 1);
        assertThat(cuts()).isEqualTo(3);

        BitSet bShards = new BitSet();
        bShards.set(40, 80);
        assertThat(table.dropSnapshotsBelow(2, bShards)).isEqualTo(40);

        assertThat(cuts()).isEqualTo(2);
        assertThat(table.catalog().referenceErrors()).isEmpty();
        new Writer("c2", 80, 128).restoreFrom(table, 1).assertEvery("k", "c1");
        new Writer("a2", 0, 40).restoreFrom(table, 1).assertEvery("k", "a1");
    }

    /**
     * A snapshot record written before the node tracked which snapshots are in checkpoint storage
     * (version 1) still reads after an upgrade: the snapshot restores and counts as local only.
     */
    @Test
    void aSnapshotRecordOfTheFirstVersionStillReads() throws IOException {
        Writer a = new Writer("a", 0, 8).open();
        a.write("k", "v1", 1);
        engine.close();
        Path record = dir.resolve("tables/t/snapshots/1");
        byte[] v2 = Files.readAllBytes(record);
        // Version 2 appends two bit sets (uploaded, evicted), empty here: an int 0 each.
        byte[] v1 = java.util.Arrays.copyOf(v2, v2.length - 8);
        java.nio.ByteBuffer.wrap(v1).putInt(4, 1);
        Files.write(record, v1);

        engine = StorageEngine.open(Ops.smallOptions(dir));
        table = engine.tableStore("t");
        assertThat(table.allSnapshots())
                .hasSize(8)
                .allSatisfy(
                        s -> {
                            assertThat(s.meta().local()).isTrue();
                            assertThat(s.meta().inCheckpointStorage()).isFalse();
                        });
        new Writer("b", 0, 8).restoreFrom(table, 1).assertEvery("k", "v1");
    }

    @Test
    void aRestartKeepsLeasesStoresAndSnapshots() {
        Writer a = new Writer("a", 0, 64).open();
        a.write("k", "v1", 1);
        a.write("k", "v2", 0);
        engine.close();
        engine = StorageEngine.open(Ops.smallOptions(dir));
        table = engine.tableStore("t");
        a.assertEvery("k", "v2");
        Writer b = new Writer("b", 0, 64).restoreFrom(table, 1);
        b.assertEvery("k", "v1");
    }
}
