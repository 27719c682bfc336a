package io.taishan.kv.server;

import static io.taishan.kv.server.KvStoreEndToEndTest.b;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.taishan.bloom.BloomFilter;
import io.taishan.bloom.KeyHash;
import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.FilterUnavailableException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.NodeHealth;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardStatus;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.client.WriteResult;
import io.taishan.kv.proto.FetchFilterRequest;
import io.taishan.kv.proto.FetchFilterResponse;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.server.storage.FilterOptions;
import io.taishan.kv.server.storage.StorageTestAccess;
import java.io.ByteArrayOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.OptionalLong;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The filters through the real gRPC service and client ({@link KvStores}): never a false negative
 * for a key the model says is live, at every step of a random history of writes, deletes,
 * snapshots, restores, idle closes and restarts; the lease check; a large filter fetched in chunks;
 * the versions a writer learns; what describe and health report; drop and re-create.
 */
class FilterEndToEndTest {
    private static final String TABLE = "t";

    @TempDir Path dataDir;

    private EmbeddedKvServer start(int port) {
        return start(port, FilterOptions.DEFAULTS);
    }

    private EmbeddedKvServer start(int port, FilterOptions filters) {
        return EmbeddedKvServer.start(
                KvServerConfig.builder()
                        .dataDir(dataDir)
                        .port(port)
                        .blockCacheBytes(32 << 20)
                        .writeBufferBytes(32 << 20)
                        .storeWriteBufferBytes(4 << 20)
                        .filters(filters)
                        .build());
    }

    private static KvStore connect(EmbeddedKvServer server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .build());
    }

    private static long hash(String key) {
        return KeyHash.hash(b(key));
    }

    /** Fetches, waiting out FILTER_UNAVAILABLE as a client would (no timing assertion). */
    static ShardFilter fetch(KvStore kv, ShardLease lease) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                return kv.filters().orElseThrow().fetchFilter(lease);
            } catch (FilterUnavailableException e) {
                assertThat(System.nanoTime() - deadline).as(e.getMessage()).isNegative();
                sleep(20);
            }
        }
    }

    static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("waiting for " + what).isNegative();
            sleep(20);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    static List<String> falseNegatives(ShardFilter fetched, Iterable<String> live) {
        List<String> missing = new ArrayList<>();
        for (String key : live) {
            if (!fetched.filter().mightContain(hash(key))) {
                missing.add(key);
            }
        }
        return missing;
    }

    // ---- the model test

    /** One shard's live keys, its snapshots' key sets, and the lease on it. */
    private static final class ShardModel {
        final int shard;
        ShardLease lease;
        NavigableSet<String> live = new TreeSet<>();
        final Map<Long, NavigableSet<String>> snapshots = new HashMap<>();

        ShardModel(int shard, ShardLease lease) {
            this.shard = shard;
            this.lease = lease;
        }
    }

    @Test
    void aFetchedFilterNeverMissesALiveKeyThroughARandomHistory() {
        Random random = new Random(20261201);
        int port;
        try (EmbeddedKvServer first = start(0)) {
            port = first.port();
        }
        EmbeddedKvServer server = start(port);
        KvStore kv = connect(server);
        try {
            kv.createTable(TABLE, 4);
            List<ShardModel> shards = new ArrayList<>();
            for (int s = 0; s < 2; s++) {
                shards.add(new ShardModel(s, kv.openShard(TABLE, s)));
            }
            long nextSnapshot = 1;
            int restores = 0;
            int restarts = 0;
            for (int step = 0; step < 200; step++) {
                ShardModel m = shards.get(random.nextInt(shards.size()));
                int action = random.nextInt(100);
                boolean everyShard = false;
                if (action < 55) {
                    WriteBatch batch = new WriteBatch(TABLE);
                    int ops = 1 + random.nextInt(60);
                    for (int i = 0; i < ops; i++) {
                        String key = String.format("k%05d", random.nextInt(3000));
                        int kind = random.nextInt(10);
                        if (kind < 6) {
                            batch.put(m.lease, b(key), b("v"));
                            m.live.add(key);
                        } else if (kind < 8) {
                            batch.append(m.lease, b(key), b("e"));
                            m.live.add(key);
                        } else {
                            batch.delete(m.lease, b(key));
                            m.live.remove(key);
                        }
                    }
                    kv.write(batch);
                } else if (action < 63) {
                    String from = String.format("k%05d", random.nextInt(3000));
                    String to = String.format("k%05d", random.nextInt(3000));
                    if (from.compareTo(to) > 0) {
                        String t = from;
                        from = to;
                        to = t;
                    }
                    kv.write(new WriteBatch(TABLE).deleteRange(m.lease, b(from), b(to)));
                    m.live.subSet(from, true, to, false).clear();
                } else if (action < 75) {
                    long id = nextSnapshot++;
                    if (random.nextBoolean()) {
                        kv.write(new WriteBatch(TABLE).snapshotMarker(m.lease, id, false));
                    } else {
                        kv.snapshot(List.of(m.lease), id, false);
                    }
                    m.snapshots.put(id, new TreeSet<>(m.live));
                } else if (action < 83 && !m.snapshots.isEmpty()) {
                    List<Long> ids = new ArrayList<>(m.snapshots.keySet());
                    long id = ids.get(random.nextInt(ids.size()));
                    m.lease = kv.restore(TABLE, m.shard, id);
                    m.live = new TreeSet<>(m.snapshots.get(id));
                    restores++;
                } else if (action < 90) {
                    server.storage().closeAllIdleStores();
                    everyShard = true;
                } else if (action < 92 && restarts < 2) {
                    kv.close();
                    server.close();
                    server = start(port);
                    kv = connect(server);
                    restarts++;
                    everyShard = true;
                }
                for (ShardModel each : everyShard ? shards : List.of(m)) {
                    try (ShardFilter fetched = fetch(kv, each.lease)) {
                        assertThat(falseNegatives(fetched, each.live))
                                .as("step %d, shard %d", step, each.shard)
                                .isEmpty();
                    }
                }
            }
            assertThat(restores).isPositive();
            assertThat(restarts).isPositive();
            // Useful too: keys never written are mostly answered "absent".
            try (ShardFilter fetched = fetch(kv, shards.get(0).lease)) {
                int absent = 0;
                for (int i = 0; i < 1000; i++) {
                    absent += fetched.filter().mightContain(hash("never-" + i)) ? 0 : 1;
                }
                assertThat(absent).isGreaterThan(900);
            }
        } finally {
            kv.close();
            server.close();
        }
    }

    // ---- the lease, chunks, versions, status

    @Test
    void aFetchUnderAStaleLeaseIsFenced() {
        try (EmbeddedKvServer server = start(0);
                KvStore kv = connect(server)) {
            kv.createTable(TABLE, 2);
            ShardLease old = kv.openShard(TABLE, 1);
            kv.write(new WriteBatch(TABLE).put(old, b("a"), b("1")).snapshotMarker(old, 1, false));
            ShardLease reopened = kv.openShard(TABLE, 1);

            assertThatThrownBy(() -> kv.filters().orElseThrow().fetchFilter(old))
                    .isInstanceOf(FencedException.class)
                    .hasMessageContaining("table 't' shard 1")
                    .hasMessageContaining("epoch " + old.epoch());
            ShardLease restored = kv.restore(TABLE, 1, 1);
            assertThatThrownBy(() -> kv.filters().orElseThrow().fetchFilter(reopened))
                    .isInstanceOf(FencedException.class);
            try (ShardFilter fetched = kv.filters().orElseThrow().fetchFilter(restored)) {
                assertThat(fetched.lease()).isEqualTo(restored);
                assertThat(fetched.filter().mightContain(hash("a"))).isTrue();
            }
        }
    }

    @Test
    void aLargeFilterComesInChunksOfAtMostOneMebibyte() throws Exception {
        // A million keys at 0.01%: a filter of several MiB (the probe in the README goes to 50 MB).
        int keys = 1_000_000;
        FilterOptions precise = new FilterOptions(0.0001, 64L << 20, 256L << 20, 1, 0, 4);
        try (EmbeddedKvServer server = start(0, precise);
                KvStore kv = connect(server)) {
            kv.createTable(TABLE, 1);
            ShardLease lease = kv.openShard(TABLE, 0);
            for (int from = 0; from < keys; from += 50_000) {
                WriteBatch batch = new WriteBatch(TABLE);
                for (int i = from; i < from + 50_000; i++) {
                    batch.put(lease, key(i), new byte[0]);
                }
                kv.write(batch);
            }
            await(
                    "the rebuilds to catch up",
                    () -> {
                        ShardStatus s = kv.admin().orElseThrow().describeShards(TABLE).get(0);
                        return !s.rebuildRunning() && !s.rebuildQueued();
                    });

            long start = System.nanoTime();
            try (ShardFilter fetched = kv.filters().orElseThrow().fetchFilter(lease)) {
                long millis = (System.nanoTime() - start) / 1_000_000;
                long bytes = fetched.filter().serializedSizeBytes();
                System.out.printf(
                        "FilterEndToEndTest: %d keys, filter %d bytes, fetched in %d ms%n",
                        keys, bytes, millis);
                // The size depends on the key count at the last rebuild (700k..1M keys): > 2 MiB.
                assertThat(bytes).isGreaterThan(2L << 20);
                assertThat(fetched.filter().estimatedFpp()).isLessThan(0.001);
                int missing = 0;
                for (int i = 0; i < keys; i++) {
                    missing += fetched.filter().mightContain(KeyHash.hash(key(i))) ? 0 : 1;
                }
                assertThat(missing).isZero();

                // The same stream, read raw: a header, then chunks of at most 1 MiB that add up.
                ManagedChannel channel =
                        NettyChannelBuilder.forTarget(server.address()).usePlaintext().build();
                try {
                    Iterator<FetchFilterResponse> stream =
                            KvServiceGrpc.newBlockingStub(channel)
                                    .withDeadlineAfter(30, TimeUnit.SECONDS)
                                    .fetchFilter(
                                            FetchFilterRequest.newBuilder()
                                                    .setTable(TABLE)
                                                    .setShard(
                                                            ShardRef.newBuilder()
                                                                    .setShard(0)
                                                                    .setEpoch(lease.epoch()))
                                                    .build());
                    FetchFilterResponse header = stream.next();
                    assertThat(header.hasHeader()).isTrue();
                    assertThat(header.getHeader().getVersion()).isEqualTo(fetched.version());
                    ByteArrayOutputStream all = new ByteArrayOutputStream();
                    int chunks = 0;
                    while (stream.hasNext()) {
                        FetchFilterResponse chunk = stream.next();
                        assertThat(chunk.getChunk().size()).isBetween(1, 1 << 20);
                        chunk.getChunk().writeTo(all);
                        chunks++;
                    }
                    assertThat((long) all.size())
                            .isEqualTo(header.getHeader().getSerializedBytes());
                    assertThat(chunks)
                            .isGreaterThanOrEqualTo(3)
                            .isGreaterThanOrEqualTo((int) ((all.size() + (1 << 20) - 1) >> 20));
                    try (BloomFilter again = BloomFilter.fromBytes(all.toByteArray())) {
                        assertThat(again.mightContain(KeyHash.hash(key(keys - 1)))).isTrue();
                    }
                } finally {
                    channel.shutdownNow();
                }
            }
        }
    }

    private static byte[] key(int i) {
        return new byte[] {
            'k', (byte) (i >>> 24), (byte) (i >>> 16), (byte) (i >>> 8), (byte) i, 'x', 'y', 'z'
        };
    }

    @Test
    void aWriterLearnsOfARebuildFromItsWriteResults() {
        try (EmbeddedKvServer server = start(0);
                KvStore kv = connect(server)) {
            kv.createTable(TABLE, 2);
            ShardLease lease = kv.openShard(TABLE, 0);
            WriteResult first = kv.write(new WriteBatch(TABLE).put(lease, b("a"), b("1")));
            assertThat(first.filterVersion(0)).isEqualTo(OptionalLong.of(0));
            assertThat(first.filterVersion(1)).isEmpty();

            // Past the floor filter's capacity a rebuild comes; a later write reports it.
            WriteBatch many = new WriteBatch(TABLE);
            for (int i = 0; i < 5000; i++) {
                many.put(lease, b("key-" + i), b("v"));
            }
            kv.write(many);
            await(
                    "a rebuild",
                    () ->
                            kv.write(new WriteBatch(TABLE).put(lease, b("a"), b("2")))
                                            .filterVersion(0)
                                            .orElseThrow()
                                    > 0);
            long reported =
                    kv.write(new WriteBatch(TABLE).delete(lease, b("zzz")))
                            .filterVersion(0)
                            .orElseThrow();
            try (ShardFilter fetched = kv.filters().orElseThrow().fetchFilter(lease)) {
                assertThat(fetched.version()).isGreaterThanOrEqualTo(reported);
            }
        }
    }

    @Test
    void describeAndHealthReportTheFilters() throws Exception {
        try (EmbeddedKvServer server = start(0);
                KvStore kv = connect(server)) {
            kv.createTable(TABLE, 4);
            // Two writers: two stores, whose saved filters are files of their own.
            ShardLease s0 = kv.openShards(TABLE, new int[] {0}, "writer-0", false).get(0);
            ShardLease s1 = kv.openShards(TABLE, new int[] {1}, "writer-1", false).get(0);
            kv.write(new WriteBatch(TABLE).put(s0, b("a"), b("1")).put(s1, b("b"), b("1")));
            server.storage().closeAllIdleStores();
            kv.write(new WriteBatch(TABLE).put(s0, b("c"), b("1")));
            // Shard 1 now has data, no saved filter: what an unclean stop leaves.
            Files.delete(
                    StorageTestAccess.savedFiltersOf(server.storage().tableStore(TABLE).shard(1)));

            List<ShardStatus> shards = kv.admin().orElseThrow().describeShards(TABLE);
            assertThat(shards).extracting(ShardStatus::shard).containsExactly(0, 1);
            ShardStatus open = shards.get(0);
            assertThat(open.open()).isTrue();
            assertThat(open.epoch()).isEqualTo(s0.epoch());
            assertThat(open.filterState()).isEqualTo(ShardStatus.FilterState.AVAILABLE);
            assertThat(open.filterMemoryBytes()).isPositive();
            assertThat(open.estimatedFpp()).isBetween(0.0, 0.01);
            assertThat(shards.get(1).filterState()).isEqualTo(ShardStatus.FilterState.MISSING);

            NodeHealth health = kv.health().get(0);
            assertThat(health.filterBytes()).isEqualTo(open.filterMemoryBytes());
            assertThat(health.filterLimitBytes()).isPositive();

            // OpenShard on it starts the rebuild at once.
            ShardLease reopened = kv.openShard(TABLE, 1);
            try (ShardFilter fetched = fetch(kv, reopened)) {
                assertThat(fetched.filter().mightContain(hash("b"))).isTrue();
            }
            assertThat(kv.admin().orElseThrow().describeShards(TABLE).get(1).filterState())
                    .isEqualTo(ShardStatus.FilterState.AVAILABLE);
        }
    }

    @Test
    void aDroppedAndRecreatedTableStartsWithAnEmptyFilter() {
        try (EmbeddedKvServer server = start(0);
                KvStore kv = connect(server)) {
            kv.createTable(TABLE, 2);
            ShardLease old = kv.openShard(TABLE, 0);
            WriteBatch batch = new WriteBatch(TABLE);
            for (int i = 0; i < 500; i++) {
                batch.put(old, b("old-" + i), b("v"));
            }
            kv.write(batch.snapshotMarker(old, 1, false));
            server.storage().closeAllIdleStores();

            kv.dropTable(TABLE);
            assertThat(kv.health().get(0).filterBytes()).isZero();
            kv.createTable(TABLE, 2);
            ShardLease lease = kv.openShard(TABLE, 0);
            assertThatThrownBy(() -> kv.filters().orElseThrow().fetchFilter(old))
                    .isInstanceOf(FencedException.class);
            try (ShardFilter fetched = kv.filters().orElseThrow().fetchFilter(lease)) {
                int stale = 0;
                for (int i = 0; i < 500; i++) {
                    stale += fetched.filter().mightContain(hash("old-" + i)) ? 1 : 0;
                }
                assertThat(stale).isLessThan(25);
            }
            kv.write(new WriteBatch(TABLE).put(lease, b("old-1"), b("again")));
            try (ShardFilter fetched = kv.filters().orElseThrow().fetchFilter(lease)) {
                assertThat(fetched.filter().mightContain(hash("old-1"))).isTrue();
            }
        }
    }
}
