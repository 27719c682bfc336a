package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.append;
import static io.taishan.kv.server.storage.Ops.b;
import static io.taishan.kv.server.storage.Ops.delete;
import static io.taishan.kv.server.storage.Ops.deleteRange;
import static io.taishan.kv.server.storage.Ops.marker;
import static io.taishan.kv.server.storage.Ops.put;
import static io.taishan.kv.server.storage.Ops.s;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.Put;
import io.taishan.kv.proto.WriteOp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShardTest {
    @TempDir Path dir;

    private StorageEngine engine;
    private Shard shard;

    @BeforeEach
    void setUp() {
        engine = StorageEngine.open(Ops.smallOptions(dir));
        engine.createTable("t", 4, false);
        shard = engine.tableStore("t").shard(1);
    }

    @AfterEach
    void tearDown() {
        engine.close();
    }

    private List<SnapshotMeta> write(long epoch, WriteOp... ops) {
        return shard.write(epoch, List.of(ops));
    }

    private SnapshotMeta snapshot(long epoch, long id, boolean pinned) {
        return shard.snapshot(epoch, id, pinned);
    }

    private String get(long epoch, String key) {
        return s(shard.get(epoch, b(key)));
    }

    @Test
    void putAppendDeleteAndDeleteRangeApplyInOrder() {
        long epoch = shard.open();
        write(
                epoch,
                put("a", "1"),
                append("list", "x"),
                append("list", "y"),
                put("b", "2"),
                delete("b"),
                put("k1", "v"),
                put("k2", "v"),
                put("k3", "v"),
                deleteRange("k1", "k3"));
        write(epoch, append("list", "z"), put("a", "3"));

        assertThat(get(epoch, "a")).isEqualTo("3");
        assertThat(get(epoch, "list")).isEqualTo("x,y,z");
        assertThat(get(epoch, "b")).isNull();
        assertThat(get(epoch, "k1")).isNull();
        assertThat(get(epoch, "k2")).isNull();
        assertThat(get(epoch, "k3")).isEqualTo("v");
        assertThat(shard.multiGet(epoch, List.of(b("a"), b("nope"), b("list"))))
                .extracting(Ops::s)
                .containsExactly("3", null, "x,y,z");
    }

    @Test
    void scanPagesInUnsignedOrderWithinBounds() {
        long epoch = shard.open();
        List<WriteOp> ops = new ArrayList<>();
        for (int i = 0; i < 25; i++) {
            ops.add(put(String.format("p/%02d", i), "v" + i));
        }
        ops.add(put("o", "before"));
        ops.add(put("q", "after"));
        write(epoch, ops.toArray(new WriteOp[0]));

        List<String> seen = new ArrayList<>();
        byte[] start = new byte[0];
        int pages = 0;
        while (true) {
            ScanPage page = shard.scan(epoch, start, new byte[0], b("p/"), 10, 1 << 20, false);
            pages++;
            page.entries().forEach(e -> seen.add(s(e.key()) + "=" + s(e.value())));
            if (!page.hasMore()) {
                break;
            }
            start = page.nextStartKey();
        }
        assertThat(pages).isEqualTo(3);
        assertThat(seen).hasSize(25).first().isEqualTo("p/00=v0");
        assertThat(seen).last().isEqualTo("p/24=v24");

        ScanPage range = shard.scan(epoch, b("p/05"), b("p/08"), new byte[0], 100, 1 << 20, true);
        assertThat(range.entries())
                .extracting(e -> s(e.key()))
                .containsExactly("p/05", "p/06", "p/07");
        assertThat(range.entries()).allSatisfy(e -> assertThat(e.value()).isEmpty());
        assertThat(range.hasMore()).isFalse();

        // The byte cap stops a page early but always returns at least one entry.
        ScanPage small = shard.scan(epoch, new byte[0], new byte[0], new byte[0], 100, 1, false);
        assertThat(small.entries()).hasSize(1);
        assertThat(small.hasMore()).isTrue();
        assertThat(s(small.nextStartKey())).isEqualTo("p/00");
    }

    @Test
    void scanOrdersBytesUnsigned() {
        long epoch = shard.open();
        List<WriteOp> ops = new ArrayList<>();
        for (int v : new int[] {0xff, 0x80, 0x7f, 0x01}) {
            ops.add(
                    WriteOp.newBuilder()
                            .setPut(
                                    Put.newBuilder()
                                            .setKey(ByteString.copyFrom(new byte[] {(byte) v})))
                            .build());
        }
        shard.write(epoch, ops);
        ScanPage page = shard.scan(epoch, new byte[0], new byte[0], new byte[0], 10, 1 << 20, true);
        assertThat(page.entries())
                .extracting(e -> e.key()[0] & 0xff)
                .containsExactly(0x01, 0x7f, 0x80, 0xff);
        // A prefix of 0xff has no successor: the scan runs to the end.
        ScanPage ff =
                shard.scan(
                        epoch,
                        new byte[0],
                        new byte[0],
                        new byte[] {(byte) 0xff},
                        10,
                        1 << 20,
                        true);
        assertThat(ff.entries()).hasSize(1);
    }

    @Test
    void staleOrUnopenedEpochIsFenced() {
        assertThatThrownBy(() -> shard.get(0, b("a")))
                .isInstanceOfSatisfying(
                        KvServerException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.FENCED))
                .hasMessageContaining("never opened");
        long first = shard.open();
        long second = shard.open();
        assertThat(second).isGreaterThan(first);
        assertThatThrownBy(() -> write(first, put("a", "zombie")))
                .isInstanceOfSatisfying(
                        KvServerException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.FENCED))
                .hasMessageContaining("table 't' shard 1")
                .hasMessageContaining("epoch " + first)
                .hasMessageContaining("current epoch is " + second);
        assertThatThrownBy(() -> shard.get(first, b("a"))).isInstanceOf(KvServerException.class);
        assertThat(get(second, "a")).isNull();
    }

    @Test
    void aZombieWritingDuringTheReopenLandsNothingAfterIt() throws Exception {
        long zombieEpoch = shard.open();
        CountDownLatch running = new CountDownLatch(100);
        ExecutorService zombie = Executors.newSingleThreadExecutor();
        try {
            Future<KvServerException> fenced =
                    zombie.submit(
                            () -> {
                                for (int i = 0; ; i++) {
                                    try {
                                        write(zombieEpoch, put(String.format("z%08d", i), "x"));
                                    } catch (KvServerException e) {
                                        return e;
                                    }
                                    running.countDown();
                                }
                            });
            running.await();
            long owner = shard.open();
            int atReopen = countKeys(owner);
            assertThat(fenced.get(1, TimeUnit.MINUTES).code()).isEqualTo(ErrorCode.FENCED);
            assertThat(atReopen).isGreaterThanOrEqualTo(100);
            assertThat(countKeys(owner)).isEqualTo(atReopen);
        } finally {
            zombie.shutdownNow();
        }
    }

    private int countKeys(long epoch) {
        int count = 0;
        byte[] start = new byte[0];
        while (true) {
            ScanPage page = shard.scan(epoch, start, new byte[0], new byte[0], 1000, 1 << 20, true);
            count += page.entries().size();
            if (!page.hasMore()) {
                return count;
            }
            start = page.nextStartKey();
        }
    }

    @Test
    void snapshotMarkerCutsExactlyAndRestoreRollsBack() {
        long epoch = shard.open();
        List<SnapshotMeta> taken =
                write(
                        epoch,
                        put("a", "1"),
                        append("l", "x"),
                        marker(7, false),
                        put("a", "2"),
                        append("l", "y"),
                        put("c", "3"));
        assertThat(taken).singleElement().satisfies(m -> assertThat(m.snapshotId()).isEqualTo(7));
        write(epoch, put("d", "4"));

        long restored = shard.restore(7);
        assertThat(restored).isGreaterThan(epoch);
        assertThat(get(restored, "a")).isEqualTo("1");
        assertThat(get(restored, "l")).isEqualTo("x");
        assertThat(get(restored, "c")).isNull();
        assertThat(get(restored, "d")).isNull();
        assertThatThrownBy(() -> get(epoch, "a")).isInstanceOf(KvServerException.class);

        // The restored shard keeps working and the snapshot is unchanged by it.
        write(restored, put("a", "after-restore"));
        long again = shard.restore(7);
        assertThat(get(again, "a")).isEqualTo("1");
    }

    @Test
    void snapshotSharesFilesWithLiveData() throws IOException {
        long epoch = shard.open();
        write(epoch, put("a", "1"), put("b", "2"));
        SnapshotMeta meta = snapshot(epoch, 1, false);
        assertThat(meta.reused()).isFalse();
        assertThat(meta.fileCount()).isGreaterThan(0);

        List<Path> ssts;
        try (var cuts = Files.list(dir.resolve("tables/t/cuts"))) {
            Path cutDir = cuts.collect(java.util.stream.Collectors.toList()).get(0);
            try (var files = Files.list(cutDir)) {
                ssts = files.filter(p -> p.toString().endsWith(".sst")).toList();
            }
        }
        assertThat(ssts).isNotEmpty();
        for (Path sst : ssts) {
            // A hard link to the live SST, not a copy.
            assertThat((Integer) Files.getAttribute(sst, "unix:nlink")).isGreaterThanOrEqualTo(2);
        }
    }

    @Test
    void unchangedShardReusesItsPreviousSnapshotWithoutOpening() {
        long epoch = shard.open();
        write(epoch, put("a", "1"));
        SnapshotMeta first = snapshot(epoch, 1, false);
        assertThat(first.reused()).isFalse();

        engine.closeAllIdleStores();
        assertThat(shard.isOpen()).isFalse();
        SnapshotMeta second = snapshot(epoch, 2, false);
        assertThat(second.reused()).isTrue();
        assertThat(second.fileCount()).isEqualTo(first.fileCount());
        assertThat(shard.isOpen()).isFalse();

        // An empty write (markers only) is no change either.
        assertThat(write(epoch, marker(3, false)))
                .singleElement()
                .satisfies(m -> assertThat(m.reused()).isTrue());

        write(epoch, put("a", "2"));
        assertThat(snapshot(epoch, 4, false).reused()).isFalse();

        long restored = shard.restore(2);
        assertThat(get(restored, "a")).isEqualTo("1");
        // Restored to 2: the live data equals it, so the next snapshot reuses it.
        assertThat(snapshot(restored, 5, false).reused()).isTrue();
    }

    @Test
    void aPinnedSnapshotIsNeverReplacedByALaterOneOfItsId() {
        long epoch = shard.open();
        write(epoch, put("a", "1"));
        SnapshotMeta first = snapshot(epoch, 1, true);
        write(epoch, put("a", "2"));
        SnapshotMeta again = snapshot(epoch, 1, false);
        assertThat(again).isEqualTo(first);
        long restored = shard.restore(1);
        assertThat(get(restored, "a")).isEqualTo("1");
    }

    @Test
    void anUnpinnedSnapshotIdTakenAgainIsReplaced() {
        long epoch = shard.open();
        write(epoch, put("a", "1"));
        snapshot(epoch, 1, false);
        write(epoch, put("a", "2"));
        // A resubmitted job reuses checkpoint ids: the newer snapshot must win, never a lost one.
        snapshot(epoch, 1, false);
        assertThat(shard.snapshots()).hasSize(1);
        long restored = shard.restore(1);
        assertThat(get(restored, "a")).isEqualTo("2");
    }

    @Test
    void watermarkDropSparesPinnedAndDropRemovesAny() {
        long epoch = shard.open();
        for (long id = 1; id <= 5; id++) {
            write(epoch, put("k", "v" + id));
            snapshot(epoch, id, id == 2);
        }
        assertThat(shard.dropSnapshotsBelow(4)).isEqualTo(2);
        assertThat(shard.snapshots())
                .extracting(SnapshotMeta::snapshotId)
                .containsExactly(2L, 4L, 5L);
        assertThat(shard.dropSnapshot(2)).isTrue();
        assertThat(shard.dropSnapshot(2)).isFalse();
        assertThat(shard.snapshots()).extracting(SnapshotMeta::snapshotId).containsExactly(4L, 5L);
        assertThat(dir.resolve("tables/t/snapshots/2")).doesNotExist();
        assertThat(dir.resolve("tables/t/snapshots/1")).doesNotExist();
        // Every snapshot had its own cut (the shard changed in between): two cuts are left.
        assertThat(dir.resolve("tables/t/cuts").toFile().list()).hasSize(2);
    }

    @Test
    void restoreOfMissingSnapshotChangesNothing() {
        long epoch = shard.open();
        write(epoch, put("a", "1"));
        assertThatThrownBy(() -> shard.restore(42))
                .isInstanceOfSatisfying(
                        KvServerException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.SNAPSHOT_NOT_FOUND))
                .hasMessageContaining("snapshot 42")
                .hasMessageContaining("table 't' shard 1");
        assertThat(shard.epoch()).isEqualTo(epoch);
        assertThat(get(epoch, "a")).isEqualTo("1");
    }

    @Test
    void cloneStartsAnotherTablesShardFromASnapshot() {
        long epoch = shard.open();
        write(epoch, put("a", "1"), marker(1, false), put("a", "2"));
        engine.createTable("u", 4, false);
        Shard target = engine.tableStore("u").shard(1);

        long cloned = target.cloneFrom(shard, 1);
        assertThat(s(target.get(cloned, b("a")))).isEqualTo("1");
        // Both go on independently.
        target.write(cloned, List.of(put("a", "target")));
        write(epoch, put("a", "source"));
        assertThat(s(target.get(cloned, b("a")))).isEqualTo("target");
        assertThat(get(epoch, "a")).isEqualTo("source");
        assertThat(shard.snapshots()).hasSize(1);
        assertThat(target.snapshots()).isEmpty();
    }

    @Test
    void idleCloseFlushesSoUnsnapshottedWritesSurviveARestart() {
        long epoch = shard.open();
        write(epoch, put("a", "1"), append("l", "x"));
        assertThat(engine.openStoreCount()).isEqualTo(1);
        assertThat(engine.closeAllIdleStores()).isEqualTo(1);
        assertThat(engine.openStoreCount()).isZero();
        assertThat(get(epoch, "a")).isEqualTo("1");
        write(epoch, append("l", "y"));
        engine.close();

        engine = StorageEngine.open(Ops.smallOptions(dir));
        shard = engine.tableStore("t").shard(1);
        assertThat(shard.epoch()).isEqualTo(epoch);
        assertThat(get(epoch, "l")).isEqualTo("x,y");
    }

    @Test
    void aMillionAppendsToOneKeyReadBackInLinearTime() {
        long epoch = shard.open();
        int appends = 1_000_000;
        int perBatch = 20_000;
        long start = System.nanoTime();
        for (int i = 0; i < appends; i += perBatch) {
            List<WriteOp> batch = new ArrayList<>(perBatch);
            for (int j = i; j < i + perBatch; j++) {
                batch.add(append("list", Integer.toString(j % 10)));
            }
            write(epoch, batch.toArray(new WriteOp[0]));
            if (i == appends / 2) {
                // Half the operands in SST files, half in the memtable.
                engine.closeAllIdleStores();
            }
        }
        byte[] value = shard.get(epoch, b("list"));
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertThat(value).hasSize(2 * appends - 1);
        assertThat(value[0]).isEqualTo((byte) '0');
        assertThat(value[value.length - 1]).isEqualTo((byte) '9');
        // Measured on 2 cores: 1.2 s with the non-associative operator, 29 s with the associative
        // one (it copies the growing value once per operand; flushes merge part of the operands).
        assertThat(millis).as("ms for %d appends and a get", appends).isLessThan(15_000);
    }

    @Test
    void leastRecentlyUsedStoresAreClosedAboveTheLimit() throws InterruptedException {
        engine.close();
        StorageOptions o = Ops.smallOptions(dir);
        engine =
                StorageEngine.open(
                        new StorageOptions(
                                dir,
                                WalMode.OFF,
                                o.blockCacheBytes(),
                                o.writeBufferBytes(),
                                o.storeWriteBufferBytes(),
                                2,
                                64,
                                o.storeIdleClose(),
                                2,
                                FilterOptions.DEFAULTS,
                                SnapshotCacheOptions.DEFAULTS));
        TableStore t = engine.tableStore("t");
        List<Long> epochs = new ArrayList<>();
        for (int s = 0; s < 4; s++) {
            // One writer per shard: four stores.
            long e = t.openShards("writer-" + s, new int[] {s}, false)[0];
            epochs.add(e);
            t.shard(s).write(e, List.of(put("k", "shard" + s)));
        }
        // Eviction never waits for a table's lock: the maintenance thread's own eviction (the
        // opens asked for one) may hold it at that moment, so give it a few tries.
        for (int i = 0; i < 50 && engine.openStoreCount() > 2; i++) {
            engine.evictOverLimit();
            Thread.sleep(10);
        }
        assertThat(engine.openStoreCount()).isLessThanOrEqualTo(2);
        assertThat(t.shard(3).isOpen()).isTrue();
        assertThat(t.shard(0).isOpen()).isFalse();
        for (int s = 0; s < 4; s++) {
            assertThat(s(t.shard(s).get(epochs.get(s), b("k")))).isEqualTo("shard" + s);
        }
    }

    @Test
    void recoveryUndoesAnUnfinishedRestoreAndCut() throws IOException {
        long epoch = shard.open();
        write(epoch, put("a", "1"));
        snapshot(epoch, 1, false);
        engine.close();
        Path table = dir.resolve("tables/t");
        // A cut being made, and a fork of a restore that never committed its leases.
        Files.createDirectories(table.resolve("cuts/.tmp-7"));
        Path fork = table.resolve("stores/99");
        Files.createDirectories(fork.resolve("live"));
        Files.writeString(fork.resolve(RangeStore.META_FILE), "id=99\ncreated.at.millis=1\n");

        engine = StorageEngine.open(Ops.smallOptions(dir));
        shard = engine.tableStore("t").shard(1);
        assertThat(table.resolve("cuts/.tmp-7")).doesNotExist();
        assertThat(fork).doesNotExist();
        assertThat(shard.snapshots()).extracting(SnapshotMeta::snapshotId).containsExactly(1L);
        assertThat(get(epoch, "a")).isEqualTo("1");
    }
}
