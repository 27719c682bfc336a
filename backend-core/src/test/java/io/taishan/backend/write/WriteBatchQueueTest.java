package io.taishan.backend.write;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.backend.read.BatchedReads;
import io.taishan.backend.read.CachePolicy;
import io.taishan.backend.read.ReadCache;
import io.taishan.backend.read.ReadMetrics;
import io.taishan.backend.read.ShardFilters;
import io.taishan.backend.read.StateReader;
import io.taishan.cache.CacheType;
import io.taishan.cache.StateCache;
import io.taishan.cache.StateCacheRegistry;
import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.EmbeddedKvServer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.ExceptionUtils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The write queue against a real kv-server on loopback. */
class WriteBatchQueueTest {
    /** Long enough that only thresholds, markers and explicit flushes send batches. */
    private static final Duration NO_INTERVAL_FLUSH = Duration.ofHours(1);

    private static EmbeddedKvServer server;
    private static KvStore store;
    private static ScheduledExecutorService scheduler;

    private String table;
    private ShardLease shard0;
    private ShardLease shard1;
    private WriteBatchQueue queue;

    @BeforeAll
    static void startServer() {
        server = EmbeddedKvServer.start();
        store = KvStores.connect(KvClientConfig.forAddresses(server.address()).build());
        scheduler = Executors.newSingleThreadScheduledExecutor();
    }

    @AfterAll
    static void stopServer() {
        scheduler.shutdownNow();
        store.close();
        server.close();
    }

    @BeforeEach
    void createTable() {
        table = "queue_" + UUID.randomUUID().toString().replace('-', '_');
        store.createTable(table, 2);
        shard0 = store.openShard(table, 0);
        shard1 = store.openShard(table, 1);
    }

    @AfterEach
    void closeQueue() {
        if (queue != null) {
            queue.close();
        }
    }

    @Test
    void readsSeePendingInFlightAndAcknowledgedWritesInOrder() {
        // Three ops per batch: the writes below span several sealed batches and the open one.
        queue = newQueue(new WriteQueueConfig(1 << 20, 3, NO_INTERVAL_FLUSH, 4 << 20));
        queue.put(shard0, key(0, "a"), bytes("1"));
        queue.append(shard0, key(0, "list"), bytes("x"));
        queue.append(shard1, key(1, "list"), bytes("p"));
        queue.append(shard0, key(0, "list"), bytes("y"));
        queue.delete(shard0, key(0, "a"));
        queue.put(shard0, key(0, "m1"), bytes("v1"));
        queue.put(shard0, key(0, "m2"), bytes("v2"));
        queue.deleteRange(shard0, key(0, "m"), key(0, "n"));
        queue.append(shard0, key(0, "m2"), bytes("after-clear"));

        assertThat(read(shard0, key(0, "a"))).isNull();
        assertThat(string(read(shard0, key(0, "list")))).isEqualTo("x,y");
        assertThat(string(read(shard1, key(1, "list")))).isEqualTo("p");
        assertThat(read(shard0, key(0, "m1"))).isNull();
        assertThat(string(read(shard0, key(0, "m2")))).isEqualTo("after-clear");

        queue.flushAndWait();
        assertThat(queue.pendingOps()).isZero();
        assertThat(store.get(shard0, key(0, "a"))).isNull();
        assertThat(string(store.get(shard0, key(0, "list")))).isEqualTo("x,y");
        assertThat(store.get(shard0, key(0, "m1"))).isNull();
        assertThat(string(store.get(shard0, key(0, "m2")))).isEqualTo("after-clear");
    }

    @Test
    void pendingAppendsLandOnTheStoredValue() {
        store.write(new WriteBatch(table).put(shard0, key(0, "list"), bytes("stored")));
        queue = newQueue(new WriteQueueConfig(1 << 20, 1000, NO_INTERVAL_FLUSH, 4 << 20));

        queue.append(shard0, key(0, "list"), bytes("a"));
        queue.append(shard0, key(0, "list"), bytes("b"));

        assertThat(string(read(shard0, key(0, "list")))).isEqualTo("stored,a,b");
    }

    @Test
    void snapshotMarkerCutsTheShardExactlyWhereItWasQueued() throws Exception {
        queue = newQueue(new WriteQueueConfig(1 << 20, 1000, NO_INTERVAL_FLUSH, 4 << 20));
        queue.put(shard0, key(0, "k"), bytes("before"));
        queue.put(shard1, key(1, "k"), bytes("before"));

        var taken = queue.snapshotMarkers(List.of(shard0, shard1), 7, false);
        queue.put(shard0, key(0, "k"), bytes("after"));
        queue.put(shard1, key(1, "k"), bytes("after"));

        assertThat(taken.get())
                .extracting(SnapshotInfo::shard, SnapshotInfo::snapshotId)
                .containsExactlyInAnyOrder(
                        org.assertj.core.groups.Tuple.tuple(0, 7L),
                        org.assertj.core.groups.Tuple.tuple(1, 7L));
        queue.flushAndWait();
        assertThat(string(store.get(shard0, key(0, "k")))).isEqualTo("after");

        ShardLease restored = store.restore(table, 0, 7);
        assertThat(string(store.get(restored, key(0, "k")))).isEqualTo("before");
    }

    @Test
    void aFailedBatchFailsEveryLaterAccessWithItsCause() {
        queue = newQueue(new WriteQueueConfig(1 << 20, 1000, NO_INTERVAL_FLUSH, 4 << 20));
        store.openShard(table, 0); // a new owner fences shard0

        queue.put(shard0, key(0, "k"), bytes("lost"));

        assertThatThrownBy(queue::flushAndWait)
                .isInstanceOf(WriteQueueException.class)
                .satisfies(
                        e ->
                                assertThat(ExceptionUtils.findThrowable(e, FencedException.class))
                                        .isPresent());
        assertThatThrownBy(() -> queue.put(shard1, key(1, "k"), bytes("v")))
                .isInstanceOf(WriteQueueException.class)
                .hasMessageContaining(table);
        assertThatThrownBy(() -> read(shard1, key(1, "k"))).isInstanceOf(WriteQueueException.class);
    }

    @Test
    void heldBytesStayBoundedWhileTheWriterOutrunsTheStore() {
        long maxBytes = 64 * 1024;
        queue = newQueue(new WriteQueueConfig(16 * 1024, 1000, NO_INTERVAL_FLUSH, maxBytes));
        byte[] value = new byte[1024];
        long largestOp = 2L * (key(0, "k-0000").length + value.length) + 160;
        for (int i = 0; i < 2000; i++) {
            queue.put(shard0, key(0, String.format("k-%04d", i)), value);
            assertThat(queue.heldBytes()).isLessThanOrEqualTo(maxBytes + largestOp);
        }
        queue.flushAndWait();
        assertThat(queue.heldBytes()).isZero();
        assertThat(store.get(shard0, key(0, "k-1999"))).hasSize(1024);
    }

    private WriteBatchQueue newQueue(WriteQueueConfig config) {
        return new WriteBatchQueue(store, table, config, scheduler, null);
    }

    /** The read path without cache or filters: the pending writes over the store. */
    private byte[] read(ShardLease lease, byte[] key) {
        ShardFilters noFilters = new ShardFilters(0, 2, 2, shard -> false, false);
        StateCache noCache = new StateCacheRegistry().acquire(CacheType.NONE, 0);
        StateReader reader =
                new StateReader(
                        store,
                        queue,
                        new ReadCache(noCache, 0, 2, TtlTimeProvider.DEFAULT),
                        noFilters,
                        ReadMetrics.register(null, noCache, noFilters),
                        new BatchedReads());
        return reader.get(lease, key, CachePolicy.UNCACHED, 0);
    }

    /** Keys carry their shard, as the backend's keys carry their key group. */
    private static byte[] key(int shard, String name) {
        return (shard + "/" + name).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String string(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
