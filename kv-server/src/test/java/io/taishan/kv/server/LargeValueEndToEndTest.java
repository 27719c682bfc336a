package io.taishan.kv.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.LimitExceededException;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.TtlState;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.ScanRange;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Values above the inline limit (1 MiB by default) through the public client against a real server:
 * exact bytes around the chunk boundaries and well past the old 8 MiB cap, MultiGet and Scan mixing
 * them with small values, appends, deletes and range deletes, snapshot and restore, server-side TTL
 * expiry, the errors above the cap, and the server's large-value budget under concurrent readers.
 * {@code -Dtaishan.test.fullSizeValues=true} adds a 512 MiB value (needs a heap of about 2.5 GiB:
 * {@code -Dsurefire.argLine=-Xmx3g}).
 */
class LargeValueEndToEndTest {
    private static final int MIB = 1 << 20;
    private static final int STATE = 0x0abc0002;

    private EmbeddedKvServer server;
    private KvStore kv;
    private ShardLease lease;

    @BeforeEach
    void start() {
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder().ttlSweepInterval(Duration.ofMillis(50)).build());
        kv = KvStores.connect(KvClientConfig.forAddresses(server.address()).build());
        kv.createTable("t", 4);
        lease = kv.openShard("t", 1);
    }

    @AfterEach
    void stop() {
        if (kv != null) {
            kv.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void valuesAroundTheChunkBoundariesAndPastTheOldCapRoundTripExactly() {
        assertThat(kv.limits().maxInlineValueBytes()).isEqualTo(MIB);
        assertThat(kv.limits().maxValueBytes()).isEqualTo(512 * MIB);
        int[] sizes = {
            0,
            1,
            MIB - 1,
            MIB,
            MIB + 1,
            2 * MIB - 1,
            2 * MIB,
            2 * MIB + 1,
            5 * MIB + 12_345,
            64 * MIB
        };
        for (int size : sizes) {
            byte[] value = random(size, size);
            kv.write(new WriteBatch("t").put(lease, key("v" + size), value));
        }
        for (int size : sizes) {
            byte[] read = kv.get(lease, key("v" + size));
            assertThat(read).as("value of %d bytes", size).hasSize(size);
            assertThat(Arrays.equals(read, random(size, size)))
                    .as("exact, %d bytes", size)
                    .isTrue();
        }
    }

    @Test
    void multiGetAndScanMixLargeAndSmallValues() {
        byte[] big1 = random(3 * MIB + 7, 1);
        byte[] big2 = random(MIB + 1, 2);
        kv.write(
                new WriteBatch("t")
                        .put(lease, key("a"), bytes("small a"))
                        .put(lease, key("b"), big1)
                        .put(lease, key("c"), bytes("small c"))
                        .put(lease, key("e"), big2)
                        .put(lease, key("f"), new byte[MIB]));
        List<byte[]> values =
                kv.multiGet(lease, List.of(key("a"), key("b"), key("c"), key("d"), key("e")));
        assertThat(values.get(0)).isEqualTo(bytes("small a"));
        assertThat(Arrays.equals(values.get(1), big1)).isTrue();
        assertThat(values.get(2)).isEqualTo(bytes("small c"));
        assertThat(values.get(3)).isNull();
        assertThat(Arrays.equals(values.get(4), big2)).isTrue();
        // The same without waiting: the large values are read by their own streams.
        List<byte[]> async =
                kv.multiGetAsync(
                                Collections.nCopies(5, lease),
                                List.of(key("a"), key("b"), key("c"), key("d"), key("e")))
                        .join();
        assertThat(async.get(0)).isEqualTo(bytes("small a"));
        assertThat(Arrays.equals(async.get(1), big1)).isTrue();
        assertThat(async.get(3)).isNull();
        assertThat(Arrays.equals(async.get(4), big2)).isTrue();

        List<String> keys = new ArrayList<>();
        List<byte[]> scanned = new ArrayList<>();
        try (CloseableIterator<KvEntry> it = kv.scan(lease, ScanRange.all(), 2, false)) {
            while (it.hasNext()) {
                KvEntry e = it.next();
                keys.add(new String(e.key(), StandardCharsets.UTF_8).substring(4));
                scanned.add(e.value());
            }
        }
        assertThat(keys).containsExactly("a", "b", "c", "e", "f");
        assertThat(Arrays.equals(scanned.get(1), big1)).isTrue();
        assertThat(Arrays.equals(scanned.get(3), big2)).isTrue();
        assertThat(scanned.get(4)).hasSize(MIB);
    }

    @Test
    void aLargeAppendJoinsTheListExactly() {
        byte[] big = random(4 * MIB + 3, 3);
        kv.write(new WriteBatch("t").append(lease, key("l"), bytes("x")));
        kv.write(
                new WriteBatch("t")
                        .append(lease, key("l"), big)
                        .append(lease, key("l"), bytes("z")));
        byte[] expected = new byte[1 + 1 + big.length + 1 + 1];
        expected[0] = 'x';
        expected[1] = ',';
        System.arraycopy(big, 0, expected, 2, big.length);
        expected[expected.length - 2] = ',';
        expected[expected.length - 1] = 'z';
        assertThat(Arrays.equals(kv.get(lease, key("l")), expected)).isTrue();
    }

    @Test
    void deletesAndRangeDeletesOfLargeValuesLeaveNothingBehind() {
        WriteBatch batch = new WriteBatch("t");
        for (int i = 0; i < 6; i++) {
            batch.put(lease, key("r" + i), random(2 * MIB + i, i));
        }
        kv.write(batch);
        kv.write(
                new WriteBatch("t")
                        .delete(lease, key("r0"))
                        .deleteRange(lease, key("r1"), key("r5")));
        for (int i = 0; i < 5; i++) {
            assertThat(kv.get(lease, key("r" + i))).isNull();
        }
        assertThat(kv.multiGet(lease, List.of(key("r0"), key("r3")))).containsExactly(null, null);
        try (CloseableIterator<KvEntry> it = kv.scan(lease, ScanRange.all(), 0, false)) {
            assertThat(it.hasNext()).isTrue();
            assertThat(it.next().key()).isEqualTo(key("r5"));
            assertThat(it.hasNext()).isFalse();
        }
        kv.write(new WriteBatch("t").deleteRange(lease, key(""), key("~")));
        try (CloseableIterator<KvEntry> it = kv.scan(lease, ScanRange.all(), 0, true)) {
            assertThat(it.hasNext()).isFalse();
        }
    }

    @Test
    void aSnapshotWithLargeValuesRestoresExactly() {
        byte[] big = random(9 * MIB, 4);
        kv.write(
                new WriteBatch("t")
                        .put(lease, key("s"), big)
                        .append(lease, key("list"), random(2 * MIB, 5))
                        .snapshotMarker(lease, 7, false));
        kv.write(
                new WriteBatch("t")
                        .put(lease, key("s"), random(3 * MIB, 6))
                        .delete(lease, key("list"))
                        .put(lease, key("later"), random(2 * MIB, 7)));
        ShardLease restored = kv.restore("t", 1, 7);
        assertThat(Arrays.equals(kv.get(restored, key("s")), big)).isTrue();
        assertThat(Arrays.equals(kv.get(restored, key("list")), random(2 * MIB, 5))).isTrue();
        assertThat(kv.get(restored, key("later"))).isNull();
    }

    @Test
    void aLargeValueExpiresOnTheServer() throws Exception {
        kv.ttl()
                .orElseThrow()
                .registerTtlStates(
                        "t", List.of(new TtlState(STATE, 1_000, TtlState.Layout.VALUE, 0)));
        byte[] old = ttlValue(100, 20 * MIB);
        byte[] fresh = ttlValue(9_500, 3 * MIB);
        kv.write(
                new WriteBatch("t")
                        .put(lease, ttlKey("old"), old)
                        .put(lease, ttlKey("fresh"), fresh));
        kv.ttl().orElseThrow().reportTtlTime(List.of(lease), 5_000).get();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (kv.get(lease, ttlKey("old")) != null) {
            assertThat(System.nanoTime()).as("expired within 20 s").isLessThan(deadline);
            Thread.sleep(50);
        }
        assertThat(Arrays.equals(kv.get(lease, ttlKey("fresh")), fresh)).isTrue();
    }

    @Test
    void aValueAboveTheCapIsRefusedNamingTheLimit() {
        stop();
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .maxValueBytes(4 * MIB)
                                .maxInlineValueBytes(MIB)
                                .build());
        kv = KvStores.connect(KvClientConfig.forAddresses(server.address()).build());
        kv.createTable("t", 4);
        lease = kv.openShard("t", 1);

        assertThatThrownBy(
                        () ->
                                kv.write(
                                        new WriteBatch("t")
                                                .put(lease, key("x"), new byte[4 * MIB + 1])))
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("4194305 bytes")
                .hasMessageContaining("4194304")
                .hasMessageContaining("limits.max-value-bytes");
        // A list whose every operand fits but whose join does not: stored, its read refused.
        byte[] operand = new byte[3 * MIB];
        kv.write(new WriteBatch("t").append(lease, key("l"), operand));
        kv.write(new WriteBatch("t").append(lease, key("l"), operand));
        assertThatThrownBy(() -> kv.get(lease, key("l")))
                .isInstanceOf(KvException.class)
                .satisfies(
                        e ->
                                assertThat(((KvException) e).code())
                                        .isEqualTo(ErrorCode.LIMIT_EXCEEDED))
                .hasMessageContaining("limits.max-value-bytes")
                .hasMessageContaining(String.valueOf(6 * MIB + 1));
        kv.write(new WriteBatch("t").put(lease, key("x"), new byte[4 * MIB]));
        assertThat(kv.get(lease, key("x"))).hasSize(4 * MIB);
    }

    @Test
    void concurrentLargeReadsAndWritesWaitForTheServersBudget() throws Exception {
        stop();
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder().largeValueMemoryBytes(12 * MIB).build());
        kv = KvStores.connect(KvClientConfig.forAddresses(server.address()).build());
        kv.createTable("t", 4);
        lease = kv.openShard("t", 1);
        ShardLease other = kv.openShard("t", 2);
        int clients = 6;
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                int id = c;
                done.add(
                        pool.submit(
                                () -> {
                                    for (int round = 0; round < 3; round++) {
                                        byte[] value = random(5 * MIB + id, id * 10 + round);
                                        kv.write(
                                                new WriteBatch("t")
                                                        .put(lease, key("c" + id), value));
                                        assertThat(
                                                        Arrays.equals(
                                                                kv.get(lease, key("c" + id)),
                                                                value))
                                                .isTrue();
                                    }
                                    return null;
                                }));
            }
            // Small calls on another shard go on meanwhile.
            kv.write(new WriteBatch("t").put(other, key("small"), bytes("s")));
            while (!done.stream().allMatch(Future::isDone)) {
                assertThat(kv.get(other, key("small"))).isEqualTo(bytes("s"));
            }
            for (Future<?> f : done) {
                f.get(2, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        // Six clients moved 5 MiB values at once, yet the server never held more than its budget
        // for them; every reservation was given back.
        assertThat(server.largeValueBytesPeak()).isBetween(5L * MIB, 12L * MIB);
        assertThat(server.largeValueBytesHeld()).isZero();
    }

    @Test
    @EnabledIfSystemProperty(named = "taishan.test.fullSizeValues", matches = "true")
    void aValueOf512MiBRoundTrips() {
        int size = 512 * MIB;
        byte[] value = random(size, 512);
        kv.write(new WriteBatch("t").put(lease, key("max"), value));
        assertThat(Arrays.equals(kv.get(lease, key("max")), value)).isTrue();
    }

    private static byte[] key(String name) {
        return ("key/" + name).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] ttlKey(String name) {
        byte[] suffix = name.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(4 + suffix.length).putInt(STATE).put(suffix).array();
    }

    private static byte[] ttlValue(long timestamp, int size) {
        byte[] v = random(size, timestamp);
        ByteBuffer.wrap(v).putLong(timestamp);
        return v;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static byte[] random(int size, long seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }
}
