package io.taishan.kv.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.groups.Tuple.tuple;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.GrpcKvStore;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.LimitExceededException;
import io.taishan.kv.client.NodeHealth;
import io.taishan.kv.client.ScanRange;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.SnapshotNotFoundException;
import io.taishan.kv.client.TableExistsException;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.client.TableNotFoundException;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.client.WriteResult;
import io.taishan.kv.proto.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.annotation.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** Every call of the {@code KvStore} API through {@link GrpcKvStore} against a real server. */
class KvStoreEndToEndTest {
    private static final int MAX_KEY = 256;
    private static final int MAX_VALUE = 4096;

    private static EmbeddedKvServer server;
    private static GrpcKvStore kv;

    @BeforeAll
    static void start() {
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .maxKeyBytes(MAX_KEY)
                                .maxValueBytes(MAX_VALUE)
                                .maxRequestBytes(1 << 20)
                                .maxOpsPerRequest(1000)
                                .blockCacheBytes(32 << 20)
                                .writeBufferBytes(16 << 20)
                                .build());
        kv =
                GrpcKvStore.connect(
                        KvClientConfig.forAddresses(server.address())
                                .requestTimeout(Duration.ofSeconds(30))
                                .build());
    }

    @AfterAll
    static void stop() {
        kv.close();
        server.close();
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Nullable
    static String s(@Nullable byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    private static String tableFor(TestInfo info) {
        return info.getTestMethod().orElseThrow().getName();
    }

    private static String get(ShardLease lease, String key) {
        return s(kv.get(lease, b(key)));
    }

    private static List<String> scanKeys(ShardLease lease, ScanRange range, int pageSize) {
        List<String> keys = new ArrayList<>();
        try (CloseableIterator<KvEntry> it = kv.scan(lease, range, pageSize, true)) {
            it.forEachRemaining(e -> keys.add(s(e.key())));
        }
        return keys;
    }

    @Test
    void tablesAreCreatedDescribedListedAndDropped(TestInfo info) {
        String name = tableFor(info);
        TableInfo created = kv.createTable(name, 16);
        assertThat(created.name()).isEqualTo(name);
        assertThat(created.shardCount()).isEqualTo(16);
        assertThat(kv.createTableIfAbsent(name, 16)).isEqualTo(created);
        assertThatThrownBy(() -> kv.createTable(name, 16))
                .isInstanceOf(TableExistsException.class)
                .hasMessageContaining(name);
        assertThatThrownBy(() -> kv.createTableIfAbsent(name, 8))
                .isInstanceOf(TableExistsException.class)
                .hasMessageContaining("exists with 16 shards, not 8");
        assertThat(kv.describeTable(name)).contains(created);
        assertThat(kv.listTables()).contains(created);

        kv.dropTable(name);
        assertThat(kv.describeTable(name)).isEmpty();
        assertThat(kv.listTables()).doesNotContain(created);
        assertThatThrownBy(() -> kv.dropTable(name))
                .isInstanceOf(TableNotFoundException.class)
                .hasMessageContaining("table '" + name + "' not found");
    }

    @Test
    void writesReadsAndScans(TestInfo info) throws Exception {
        String t = tableFor(info);
        kv.createTable(t, 4);
        ShardLease s0 = kv.openShard(t, 0);
        ShardLease s3 = kv.openShard(t, 3);
        WriteBatch batch = new WriteBatch(t);
        for (int i = 0; i < 50; i++) {
            batch.put(s0, b(String.format("row/%03d", i)), b("v" + i));
        }
        batch.put(s3, b("a"), b("1"))
                .append(s3, b("list"), b("x"))
                .append(s3, b("list"), b("y"))
                .put(s3, b("gone"), b("1"))
                .delete(s3, b("gone"))
                .put(s3, b("r1"), b("1"))
                .put(s3, b("r2"), b("1"))
                .put(s3, b("r3"), b("1"))
                .deleteRange(s3, b("r1"), b("r3"));
        assertThat(kv.write(batch).snapshots()).isEmpty();
        CompletableFuture<WriteResult> async =
                kv.writeAsync(new WriteBatch(t).append(s3, b("list"), b("z")));
        async.get(30, TimeUnit.SECONDS);

        assertThat(get(s3, "a")).isEqualTo("1");
        assertThat(get(s3, "list")).isEqualTo("x,y,z");
        assertThat(get(s3, "gone")).isNull();
        assertThat(get(s3, "r1")).isNull();
        assertThat(get(s3, "r2")).isNull();
        assertThat(get(s3, "r3")).isEqualTo("1");
        // Shards are separate: shard 0 has no "a".
        assertThat(get(s0, "a")).isNull();
        assertThat(kv.multiGet(s3, List.of(b("a"), b("nope"), b("list"))))
                .extracting(KvStoreEndToEndTest::s)
                .containsExactly("1", null, "x,y,z");

        List<String> all = scanKeys(s0, ScanRange.all(), 7);
        assertThat(all).hasSize(50);
        assertThat(all).isSorted();
        assertThat(scanKeys(s0, ScanRange.prefix(b("row/01")), 3))
                .containsExactly(
                        "row/010", "row/011", "row/012", "row/013", "row/014", "row/015", "row/016",
                        "row/017", "row/018", "row/019");
        assertThat(scanKeys(s0, ScanRange.between(b("row/045"), b("row/048")), 0))
                .containsExactly("row/045", "row/046", "row/047");
        try (CloseableIterator<KvEntry> it = kv.scan(s3, ScanRange.all(), 0, false)) {
            List<String> entries = new ArrayList<>();
            it.forEachRemaining(e -> entries.add(s(e.key()) + "=" + s(e.value())));
            assertThat(entries).containsExactly("a=1", "list=x,y,z", "r3=1");
        }
    }

    @Test
    void snapshotAtAMarkerThenRestoreShowsExactlyTheWritesBeforeIt(TestInfo info) {
        String t = tableFor(info);
        kv.createTable(t, 2);
        ShardLease lease = kv.openShard(t, 1);
        WriteResult result =
                kv.write(
                        new WriteBatch(t)
                                .put(lease, b("a"), b("before"))
                                .append(lease, b("l"), b("1"))
                                .snapshotMarker(lease, 10, false)
                                .put(lease, b("a"), b("after"))
                                .append(lease, b("l"), b("2"))
                                .put(lease, b("only-after"), b("x")));
        assertThat(result.snapshots())
                .singleElement()
                .satisfies(
                        snap -> {
                            assertThat(snap.table()).isEqualTo(t);
                            assertThat(snap.shard()).isEqualTo(1);
                            assertThat(snap.snapshotId()).isEqualTo(10);
                            assertThat(snap.reused()).isFalse();
                        });
        assertThat(get(lease, "a")).isEqualTo("after");

        ShardLease restored = kv.restore(t, 1, 10);
        assertThat(restored.epoch()).isGreaterThan(lease.epoch());
        assertThat(get(restored, "a")).isEqualTo("before");
        assertThat(get(restored, "l")).isEqualTo("1");
        assertThat(get(restored, "only-after")).isNull();
    }

    @Test
    void restoreAfterLaterWritesRollsThemBack(TestInfo info) {
        String t = tableFor(info);
        kv.createTable(t, 1);
        ShardLease lease = kv.openShard(t, 0);
        kv.write(new WriteBatch(t).put(lease, b("k"), b("v1")));
        assertThat(kv.snapshot(List.of(lease), 1, false))
                .singleElement()
                .satisfies(snap -> assertThat(snap.snapshotId()).isEqualTo(1));
        kv.write(new WriteBatch(t).put(lease, b("k"), b("v2")).put(lease, b("new"), b("x")));
        kv.snapshot(List.of(lease), 2, false);
        kv.write(new WriteBatch(t).put(lease, b("k"), b("v3")).delete(lease, b("new")));

        ShardLease back = kv.restore(t, 0, 1);
        assertThat(get(back, "k")).isEqualTo("v1");
        assertThat(get(back, "new")).isNull();
        assertThat(scanKeys(back, ScanRange.all(), 0)).containsExactly("k");

        // Snapshots outlive a restore: roll forward to 2 as well.
        ShardLease forward = kv.restore(t, 0, 2);
        assertThat(get(forward, "k")).isEqualTo("v2");
        assertThat(get(forward, "new")).isEqualTo("x");
    }

    @Test
    void cloneWhileTheSourceKeepsWriting(TestInfo info) throws Exception {
        String source = tableFor(info) + "-src";
        String target = tableFor(info) + "-dst";
        kv.createTable(source, 4);
        kv.createTable(target, 4);
        ShardLease lease = kv.openShard(source, 2);
        CountDownLatch snapshotTaken = new CountDownLatch(1);
        CountDownLatch cloned = new CountDownLatch(1);
        AtomicReference<Integer> written = new AtomicReference<>(0);
        ExecutorService writer = Executors.newSingleThreadExecutor();
        try {
            // Writes one key per batch from before the snapshot until 20 batches after the clone.
            Future<?> writing =
                    writer.submit(
                            () -> {
                                int i = 0;
                                int afterClone = 0;
                                while (afterClone < 20) {
                                    WriteBatch batch =
                                            new WriteBatch(source)
                                                    .put(lease, b("k" + i), b("v" + i));
                                    if (i == 99) {
                                        batch.snapshotMarker(lease, 7, false);
                                    }
                                    kv.write(batch);
                                    if (i == 99) {
                                        snapshotTaken.countDown();
                                    }
                                    if (cloned.getCount() == 0) {
                                        afterClone++;
                                    }
                                    written.set(++i);
                                }
                                return null;
                            });
            assertThat(snapshotTaken.await(60, TimeUnit.SECONDS)).isTrue();
            ShardLease clone = kv.cloneShard(source, 2, 7, target);
            cloned.countDown();
            writing.get(60, TimeUnit.SECONDS);

            assertThat(clone.table()).isEqualTo(target);
            List<String> clonedKeys = scanKeys(clone, ScanRange.all(), 0);
            assertThat(clonedKeys).hasSize(100);
            assertThat(get(clone, "k99")).isEqualTo("v99");
            assertThat(get(clone, "k100")).isNull();
            assertThat(scanKeys(lease, ScanRange.all(), 0)).hasSize(written.get());
            assertThat(kv.listSnapshots(target)).isEmpty();
            assertThat(kv.listSnapshots(source, 2))
                    .extracting(SnapshotInfo::snapshotId)
                    .containsExactly(7L);
        } finally {
            cloned.countDown();
            writer.shutdownNow();
        }
    }

    @Test
    void aFencedZombieCanNeitherWriteNorRead(TestInfo info) {
        String t = tableFor(info);
        kv.createTable(t, 2);
        ShardLease zombie = kv.openShard(t, 0);
        kv.write(new WriteBatch(t).put(zombie, b("k"), b("zombie-before")));

        ShardLease owner = kv.openShard(t, 0);
        assertThat(owner.epoch()).isGreaterThan(zombie.epoch());
        assertThatThrownBy(() -> kv.write(new WriteBatch(t).put(zombie, b("k"), b("zombie-after"))))
                .isInstanceOf(FencedException.class)
                .hasMessageContaining("table '" + t + "' shard 0")
                .hasMessageContaining("epoch " + zombie.epoch());
        assertThatThrownBy(
                        () ->
                                kv.write(
                                        new WriteBatch(t)
                                                .append(zombie, b("list"), b("z"))
                                                .snapshotMarker(zombie, 1, false)))
                .isInstanceOf(FencedException.class);
        assertThatThrownBy(() -> kv.get(zombie, b("k"))).isInstanceOf(FencedException.class);
        assertThatThrownBy(() -> kv.multiGet(zombie, List.of(b("k"))))
                .isInstanceOf(FencedException.class);
        assertThatThrownBy(() -> scanKeys(zombie, ScanRange.all(), 0))
                .isInstanceOf(FencedException.class);
        assertThatThrownBy(() -> kv.snapshot(List.of(zombie), 2, false))
                .isInstanceOf(FencedException.class);

        assertThat(get(owner, "k")).isEqualTo("zombie-before");
        assertThat(get(owner, "list")).isNull();
        assertThat(kv.listSnapshots(t, 0)).isEmpty();

        // A restore fences the owner too.
        kv.snapshot(List.of(owner), 3, false);
        ShardLease afterRestore = kv.restore(t, 0, 3);
        assertThatThrownBy(() -> kv.write(new WriteBatch(t).put(owner, b("k"), b("late"))))
                .isInstanceOf(FencedException.class);
        assertThat(get(afterRestore, "k")).isEqualTo("zombie-before");
    }

    @Test
    void watermarkDropSparesPinnedSnapshots(TestInfo info) {
        String t = tableFor(info);
        kv.createTable(t, 2);
        ShardLease s0 = kv.openShard(t, 0);
        ShardLease s1 = kv.openShard(t, 1);
        for (long id = 1; id <= 4; id++) {
            kv.write(new WriteBatch(t).put(s0, b("k"), b("v" + id)).put(s1, b("k"), b("v" + id)));
            kv.snapshot(List.of(s0, s1), id, id == 2);
        }
        assertThat(kv.listSnapshots(t)).hasSize(8);
        assertThat(kv.dropSnapshotsBelow(t, 4)).isEqualTo(4);
        assertThat(kv.listSnapshots(t))
                .extracting(SnapshotInfo::shard, SnapshotInfo::snapshotId, SnapshotInfo::pinned)
                .containsExactlyInAnyOrder(
                        tuple(0, 2L, true),
                        tuple(0, 4L, false),
                        tuple(1, 2L, true),
                        tuple(1, 4L, false));
        // The pinned one still restores, and can be dropped explicitly.
        assertThat(get(kv.restore(t, 1, 2), "k")).isEqualTo("v2");
        assertThat(kv.dropSnapshot(t, 1, 2)).isTrue();
        assertThat(kv.dropSnapshot(t, 1, 2)).isFalse();
        assertThatThrownBy(() -> kv.restore(t, 1, 2))
                .isInstanceOf(SnapshotNotFoundException.class)
                .hasMessageContaining("snapshot 2 of table '" + t + "' shard 1 not found");
        assertThat(kv.listSnapshots(t, 1)).extracting(SnapshotInfo::snapshotId).containsExactly(4L);
    }

    @Test
    void theFirstPagesOfManyShardsComeBackInOrderFromOneCall(TestInfo info) {
        String t = tableFor(info);
        kv.createTable(t, 64);
        int[] shards = new int[64];
        for (int s = 0; s < shards.length; s++) {
            shards[s] = s;
        }
        List<ShardLease> leases = kv.openShards(t, shards, "writer", false);
        WriteBatch batch = new WriteBatch(t);
        for (ShardLease lease : leases) {
            // Shard s holds s keys under "p/" and one outside the scanned range.
            for (int k = 0; k < lease.shard(); k++) {
                batch.put(lease, b(String.format("p/%03d", k)), b("v" + lease.shard()));
            }
            batch.put(lease, b("q/outside"), b("x"));
        }
        kv.write(batch);
        List<KvStore.PageQuery> queries = new ArrayList<>();
        for (int s = 63; s >= 0; s--) {
            queries.add(
                    new KvStore.PageQuery(leases.get(s), ScanRange.prefix(b("p/")), 5, s % 2 == 0));
        }
        List<KvStore.Page> pages = kv.firstPages(queries);
        assertThat(pages).hasSize(64);
        for (int i = 0; i < pages.size(); i++) {
            int shard = 63 - i;
            KvStore.Page page = pages.get(i);
            assertThat(page.entries())
                    .extracting(e -> new String(e.key(), StandardCharsets.UTF_8))
                    .as("shard %d", shard)
                    .containsExactlyElementsOf(
                            java.util.stream.IntStream.range(0, Math.min(5, shard))
                                    .mapToObj(k -> String.format("p/%03d", k))
                                    .toList());
            assertThat(page.hasMore()).as("shard %d", shard).isEqualTo(shard > 5);
            if (shard % 2 == 1 && shard > 0) {
                assertThat(page.entries().get(0).value()).isEqualTo(b("v" + shard));
            }
        }
    }

    @Test
    void anUnchangedShardReusesItsPreviousSnapshot(TestInfo info) {
        String t = tableFor(info);
        kv.createTable(t, 1);
        ShardLease lease = kv.openShard(t, 0);
        kv.write(new WriteBatch(t).put(lease, b("k"), b("v")));
        SnapshotInfo first = kv.snapshot(List.of(lease), 1, false).get(0);
        SnapshotInfo second = kv.snapshot(List.of(lease), 2, false).get(0);
        SnapshotInfo third =
                kv.write(new WriteBatch(t).snapshotMarker(lease, 3, false)).snapshots().get(0);
        assertThat(first.reused()).isFalse();
        assertThat(second.reused()).isTrue();
        assertThat(third.reused()).isTrue();
        assertThat(second.fileCount()).isEqualTo(first.fileCount());
        assertThat(second.sizeBytes()).isEqualTo(first.sizeBytes());
        // An unpinned id taken again is replaced (the shard is unchanged, so by the same cut).
        SnapshotInfo again = kv.snapshot(List.of(lease), 1, true).get(0);
        assertThat(again.pinned()).isTrue();
        assertThat(again.reused()).isTrue();
        assertThat(again.sizeBytes()).isEqualTo(first.sizeBytes());
        // A pinned one stays as it is.
        assertThat(kv.snapshot(List.of(lease), 1, false).get(0).pinned()).isTrue();
        kv.dropSnapshot(t, 0, 1);
        assertThat(get(kv.restore(t, 0, 2), "k")).isEqualTo("v");
    }

    @Test
    void badInputGetsTypedErrorsNamingWhatWasWrong(TestInfo info) {
        String t = tableFor(info);
        kv.createTable(t, 4);
        assertThatThrownBy(() -> kv.openShard("no-such-table", 0))
                .isInstanceOf(TableNotFoundException.class)
                .hasMessageContaining("no-such-table");
        assertThatThrownBy(() -> kv.openShard(t, 4))
                .isInstanceOfSatisfying(
                        KvException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.SHARD_OUT_OF_RANGE))
                .hasMessageContaining("shard 4");
        ShardLease lease = kv.openShard(t, 1);
        ShardLease wrongEpoch = new ShardLease(t, 1, lease.epoch() + 5);
        assertThatThrownBy(() -> kv.get(wrongEpoch, b("k")))
                .isInstanceOf(FencedException.class)
                .hasMessageContaining("epoch " + wrongEpoch.epoch());
        assertThatThrownBy(() -> kv.restore(t, 1, 404))
                .isInstanceOf(SnapshotNotFoundException.class)
                .hasMessageContaining("snapshot 404");
        assertThatThrownBy(() -> kv.cloneShard(t, 1, 404, t))
                .isInstanceOf(SnapshotNotFoundException.class);
        assertThatThrownBy(
                        () -> kv.write(new WriteBatch(t).put(lease, new byte[MAX_KEY + 1], b("v"))))
                .isInstanceOf(LimitExceededException.class);
        assertThatThrownBy(
                        () ->
                                kv.write(
                                        new WriteBatch(t)
                                                .put(lease, b("k"), new byte[MAX_VALUE + 1])))
                .isInstanceOf(LimitExceededException.class);
        assertThatThrownBy(
                        () ->
                                kv.write(
                                        new WriteBatch(t)
                                                .append(lease, b("k"), new byte[MAX_VALUE + 1])))
                .isInstanceOf(LimitExceededException.class);
        assertThat(get(lease, "k")).isNull();
        assertThat(kv.limits().maxKeyBytes()).isEqualTo(MAX_KEY);
    }

    @Test
    void healthReportsTheNode() {
        List<NodeHealth> health = kv.health();
        assertThat(health)
                .singleElement()
                .satisfies(
                        h -> {
                            assertThat(h.isServing()).isTrue();
                            assertThat(h.address()).isEqualTo(server.address());
                            assertThat(h.nodeIndex()).isZero();
                        });
    }
}
