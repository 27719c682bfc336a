package io.taishan.kv.client;

import static io.taishan.kv.client.WriteBatchTest.b;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.proto.Limits;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.protocol.ScanRange;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every call of the client against one node, and the limits it enforces before sending. */
class GrpcKvStoreTest {
    private static final Limits SMALL_LIMITS =
            Limits.newBuilder()
                    .setMaxKeyBytes(32)
                    .setMaxValueBytes(256)
                    .setMaxRequestBytes(4096)
                    .setMaxOpsPerRequest(4)
                    .setMaxScanPageEntries(100)
                    .setMaxScanPageBytes(1 << 20)
                    .build();

    private ScriptedCluster cluster;
    private ScriptedKvService server;
    private GrpcKvStore store;

    @BeforeEach
    void setUp() {
        cluster = ScriptedCluster.start(1, SMALL_LIMITS, 3);
        server = cluster.node(0);
        store =
                GrpcKvStore.connect(
                        KvClientConfig.forAddresses(cluster.address(0))
                                .requestTimeout(Duration.ofSeconds(5))
                                .build());
    }

    @AfterEach
    void tearDown() {
        store.close();
        cluster.close();
    }

    @Test
    void reportsTheServersLimits() {
        assertThat(store.limits()).isEqualTo(new KvLimits(32, 256, 4096, 4, 100, 1 << 20));
    }

    @Test
    void tableLifecycle() {
        TableInfo created = store.createTable("t", 8);
        assertThat(created.name()).isEqualTo("t");
        assertThat(created.shardCount()).isEqualTo(8);

        assertThat(store.createTableIfAbsent("t", 8)).isEqualTo(created);
        assertThatThrownBy(() -> store.createTableIfAbsent("t", 9))
                .isInstanceOf(TableExistsException.class);
        assertThatThrownBy(() -> store.createTable("t", 8))
                .isInstanceOf(TableExistsException.class);
        assertThat(store.describeTable("t")).contains(created);
        store.createTable("u", 1);
        assertThat(store.listTables()).extracting(TableInfo::name).containsExactly("t", "u");

        store.dropTable("t");
        assertThat(store.describeTable("t")).isEmpty();
        assertThatThrownBy(() -> store.dropTable("t")).isInstanceOf(TableNotFoundException.class);
        assertThatThrownBy(() -> store.openShard("t", 0))
                .isInstanceOf(TableNotFoundException.class);
    }

    @Test
    void writesThenReads() {
        store.createTable("t", 4);
        ShardLease lease = store.openShard("t", 2);
        assertThat(store.get(lease, b("a"))).isNull();

        store.write(
                new WriteBatch("t")
                        .put(lease, b("a"), b("1"))
                        .put(lease, b("b"), b("2"))
                        .append(lease, b("l"), b("x"))
                        .append(lease, b("l"), b("y")));
        store.write(
                new WriteBatch("t")
                        .delete(lease, b("a"))
                        .put(lease, b("c"), b("3"))
                        .put(lease, b("d"), b("4")));
        store.write(new WriteBatch("t").deleteRange(lease, b("c"), b("d")));

        assertThat(store.get(lease, b("a"))).isNull();
        assertThat(store.get(lease, b("b"))).isEqualTo(b("2"));
        assertThat(store.get(lease, b("c"))).isNull();
        assertThat(store.get(lease, b("d"))).isEqualTo(b("4"));
        assertThat(store.get(lease, b("l"))).isEqualTo(b("x,y"));
        assertThat(store.write(new WriteBatch("t"))).isSameAs(WriteResult.EMPTY);
    }

    @Test
    void multiGetAnswersInOrderWithNullsAndSplitsOverTheLimit() {
        store.createTable("t", 1);
        ShardLease lease = store.openShard("t", 0);
        store.write(
                new WriteBatch("t")
                        .put(lease, b("k1"), b("v1"))
                        .put(lease, b("k4"), b("v4"))
                        .put(lease, b("k6"), b("v6")));
        List<byte[]> keys = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            keys.add(b("k" + i));
        }

        List<byte[]> values = store.multiGet(lease, keys);

        assertThat(values).containsExactly(null, b("v1"), null, null, b("v4"), null, b("v6"));
        // Four keys per request at most: 4 + 3.
        assertThat(server.calls("MultiGet")).isEqualTo(2);
        assertThat(store.multiGet(lease, List.of())).isEmpty();
        assertThat(server.calls("MultiGet")).isEqualTo(2);
    }

    @Test
    void scanFetchesPagesLazilyAndResumesWhereThePageEnded() {
        store.createTable("t", 1);
        ShardLease lease = store.openShard("t", 0);
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            WriteBatch twoKeys = new WriteBatch("t");
            for (int j = 0; j < 2; j++) {
                String key = "k" + i + j;
                twoKeys.put(lease, b(key), b("v" + i + j));
                expected.add(key);
            }
            store.write(twoKeys);
        }

        CloseableIterator<KvEntry> it = store.scan(lease, ScanRange.all(), 0, false);
        assertThat(server.calls("Scan")).isZero();
        List<String> seen = new ArrayList<>();
        while (it.hasNext()) {
            KvEntry entry = it.next();
            seen.add(s(entry.key()));
            assertThat(s(entry.value())).isEqualTo("v" + s(entry.key()).substring(1));
        }
        it.close();

        assertThat(seen).isEqualTo(expected);
        // The server's default page is 3: 3 + 3 + 2.
        assertThat(server.calls("Scan")).isEqualTo(3);
        assertThat(server.<io.taishan.kv.proto.ScanRequest>requests("Scan"))
                .extracting(r -> s(r.getStartKey().toByteArray()))
                .containsExactly("", "k11", "k30");
    }

    @Test
    void scanHonoursRangesPrefixesKeysOnlyAndClose() {
        store.createTable("t", 1);
        ShardLease lease = store.openShard("t", 0);
        store.write(
                new WriteBatch("t")
                        .put(lease, new byte[] {1, 0}, b("a"))
                        .put(lease, new byte[] {1, (byte) 0xFF}, b("b"))
                        .put(lease, new byte[] {2}, b("c"))
                        .put(lease, new byte[] {(byte) 0x80}, b("d")));

        assertThat(keys(store.scan(lease, ScanRange.prefix(new byte[] {1}), 1, false)))
                .containsExactly("0100", "01ff");
        assertThat(
                        keys(
                                store.scan(
                                        lease,
                                        ScanRange.between(
                                                new byte[] {1, 1}, new byte[] {(byte) 0x80}),
                                        0,
                                        false)))
                .containsExactly("01ff", "02");
        // Unsigned order: 0x80 sorts after 0x02.
        assertThat(keys(store.scan(lease, ScanRange.all(), 2, true)))
                .containsExactly("0100", "01ff", "02", "80");
        try (CloseableIterator<KvEntry> it = store.scan(lease, ScanRange.all(), 0, true)) {
            assertThat(it.next().value()).isEmpty();
            it.close();
            assertThat(it.hasNext()).isFalse();
        }
        assertThatThrownBy(() -> store.scan(lease, ScanRange.all(), -1, false))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aBatchIsCutIntoRequestsWithinTheLimitsKeepingEachShardWhole() {
        store.createTable("t", 8);
        WriteBatch batch = new WriteBatch("t");
        for (int shard = 0; shard < 8; shard++) {
            ShardLease lease = store.openShard("t", shard);
            batch.put(lease, b("a"), b("a" + shard)).put(lease, b("b"), b("b" + shard));
        }

        store.write(batch);

        List<io.taishan.kv.proto.WriteRequest> requests = server.requests("Write");
        assertThat(requests).hasSize(4);
        for (io.taishan.kv.proto.WriteRequest request : requests) {
            assertThat(request.getShardsCount()).isEqualTo(2);
            assertThat(request.getShardsList())
                    .allSatisfy(s -> assertThat(s.getOpsCount()).isEqualTo(2));
        }
        ShardLease shard5 = new ShardLease("t", 5, 1);
        assertThat(store.get(shard5, b("b"))).isEqualTo(b("b5"));
    }

    @Test
    void aShardOverTheLimitSendsNothing() {
        store.createTable("t", 2);
        ShardLease small = store.openShard("t", 0);
        ShardLease big = store.openShard("t", 1);
        WriteBatch batch = new WriteBatch("t").put(small, b("k"), b("v"));
        for (int i = 0; i < 5; i++) {
            batch.append(big, b("l"), b("" + i));
        }

        CompletableFuture<WriteResult> result = store.writeAsync(batch);

        assertThatThrownBy(result::get)
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("shard 1")
                .hasMessageContaining("5 ops");
        assertThatThrownBy(() -> store.write(batch)).isInstanceOf(LimitExceededException.class);
        assertThat(server.calls("Write")).isZero();
        assertThat(store.get(small, b("k"))).isNull();
    }

    @Test
    void oversizedKeysAndValuesAreRejectedBeforeSending() {
        store.createTable("t", 1);
        ShardLease lease = store.openShard("t", 0);

        assertThatThrownBy(() -> store.write(new WriteBatch("t").put(lease, b("k"), new byte[257])))
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("value of 257 bytes")
                .hasMessageContaining("limit of 256 bytes");
        assertThatThrownBy(() -> store.write(new WriteBatch("t").delete(lease, new byte[33])))
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("key of 33 bytes")
                .hasMessageContaining("limit of 32 bytes");
        assertThatThrownBy(() -> store.multiGet(lease, List.of(b("ok"), new byte[33])))
                .isInstanceOf(LimitExceededException.class);
        // Sent without waiting, behind ops within the limits, each kind of op is checked too.
        WriteBatch rangeEndTooLong =
                new WriteBatch("t")
                        .put(lease, b("k"), b("v"))
                        .deleteRange(lease, b("a"), new byte[33]);
        assertThatThrownBy(() -> store.writeAsync(rangeEndTooLong).get())
                .cause()
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("delete-range end");
        WriteBatch appendTooLarge =
                new WriteBatch("t").put(lease, b("k"), b("v")).append(lease, b("k"), new byte[257]);
        assertThatThrownBy(() -> store.writeAsync(appendTooLarge).get())
                .cause()
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("value of 257 bytes (append");
        assertThat(server.calls("Write")).isZero();
        assertThat(server.calls("MultiGet")).isZero();
        LimitExceededException e =
                org.assertj.core.api.Assertions.catchThrowableOfType(
                        () -> store.write(new WriteBatch("t").put(lease, b("k"), new byte[257])),
                        LimitExceededException.class);
        assertThat(e.address()).isNull();
    }

    @Test
    void markersReturnTheirSnapshotsInOrderPerShard() {
        store.createTable("t", 2);
        ShardLease s0 = store.openShard("t", 0);
        ShardLease s1 = store.openShard("t", 1);

        WriteResult result =
                store.write(
                        new WriteBatch("t")
                                .put(s1, b("a"), b("1"))
                                .snapshotMarker(s1, 10, false)
                                .put(s0, b("a"), b("1"))
                                .snapshotMarker(s0, 10, false)
                                .snapshotMarker(s1, 11, true));

        assertThat(result.snapshots())
                .extracting(SnapshotInfo::shard, SnapshotInfo::snapshotId, SnapshotInfo::pinned)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(1, 10L, false),
                        org.assertj.core.groups.Tuple.tuple(1, 11L, true),
                        org.assertj.core.groups.Tuple.tuple(0, 10L, false));
    }

    @Test
    void snapshotsRestoreCloneListAndDrop() {
        store.createTable("src", 2);
        store.createTable("dst", 2);
        ShardLease s0 = store.openShard("src", 0);
        ShardLease s1 = store.openShard("src", 1);

        List<SnapshotInfo> taken = store.snapshot(List.of(s0, s1), 1, false);
        assertThat(taken).extracting(SnapshotInfo::shard).containsExactly(0, 1);
        store.snapshot(List.of(s0), 2, true);
        store.snapshot(List.of(s0, s1), 3, false);
        assertThat(store.snapshot(List.of(), 4, false)).isEmpty();

        assertThat(store.listSnapshots("src"))
                .extracting(SnapshotInfo::shard, SnapshotInfo::snapshotId)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(0, 1L),
                        org.assertj.core.groups.Tuple.tuple(0, 2L),
                        org.assertj.core.groups.Tuple.tuple(0, 3L),
                        org.assertj.core.groups.Tuple.tuple(1, 1L),
                        org.assertj.core.groups.Tuple.tuple(1, 3L));
        assertThat(store.listSnapshots("src", 1))
                .extracting(SnapshotInfo::snapshotId)
                .containsExactly(1L, 3L);

        ShardLease restored = store.restore("src", 0, 1);
        assertThat(restored.table()).isEqualTo("src");
        assertThat(restored.epoch()).isGreaterThan(s0.epoch());
        assertThatThrownBy(() -> store.get(s0, b("k"))).isInstanceOf(FencedException.class);
        ShardLease cloned = store.cloneShard("src", 1, 3, "dst");
        assertThat(cloned).isEqualTo(new ShardLease("dst", 1, 1, ScriptedKvService.nameOf(0)));
        assertThatThrownBy(() -> store.restore("src", 0, 99))
                .isInstanceOf(SnapshotNotFoundException.class);

        // Below 3: the unpinned 1s go, the pinned 2 stays.
        assertThat(store.dropSnapshotsBelow("src", 3)).isEqualTo(2);
        assertThat(store.dropSnapshot("src", 0, 2)).isTrue();
        assertThat(store.dropSnapshot("src", 0, 2)).isFalse();
        assertThat(store.listSnapshots("src"))
                .extracting(SnapshotInfo::snapshotId)
                .containsExactly(3L, 3L);
    }

    @Test
    void snapshotCoversOneTable() {
        store.createTable("a", 1);
        store.createTable("b", 1);
        List<ShardLease> mixed = List.of(store.openShard("a", 0), store.openShard("b", 0));
        assertThatThrownBy(() -> store.snapshot(mixed, 1, false))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void outOfRangeShardsGetTheServersAnswer() {
        store.createTable("t", 4);
        KvException e =
                org.assertj.core.api.Assertions.catchThrowableOfType(
                        () -> store.openShard("t", 4), KvException.class);
        assertThat(e.code()).isEqualTo(io.taishan.kv.proto.ErrorCode.SHARD_OUT_OF_RANGE);
        assertThat(e.address()).isEqualTo(cluster.address(0));
    }

    @Test
    void healthOfTheNode() {
        store.createTable("t", 1);
        assertThat(store.health())
                .singleElement()
                .satisfies(
                        h -> {
                            assertThat(h.isServing()).isTrue();
                            assertThat(h.address()).isEqualTo(cluster.address(0));
                            assertThat(h.tables()).isEqualTo(1);
                        });
    }

    @Test
    void closeIsFinalAndIdempotent() {
        store.createTable("t", 1);
        ShardLease lease = store.openShard("t", 0);
        store.close();
        store.close();

        assertThatThrownBy(() -> store.get(lease, b("k")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThat(store.writeAsync(new WriteBatch("t").put(lease, b("k"), b("v"))))
                .isCompletedExceptionally();
    }

    private static List<String> keys(CloseableIterator<KvEntry> it) {
        List<String> keys = new ArrayList<>();
        try (it) {
            while (it.hasNext()) {
                keys.add(hex(it.next().key()));
            }
        }
        return keys;
    }

    private static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder();
        for (byte x : bytes) {
            sb.append(String.format("%02x", x));
        }
        return sb.toString();
    }

    private static String s(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
