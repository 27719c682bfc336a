package io.taishan.kv.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.TtlState;
import io.taishan.kv.client.WriteBatch;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Server-side expiry through the public client: a backend registers its TTL'd state and reports its
 * clock; expired entries leave the server with nobody reading them, live ones stay, and a zombie's
 * clock report is fenced.
 */
class ExpiryEndToEndTest {
    private static final int STATE = 0x0abc0001;

    private EmbeddedKvServer server;
    private KvStore kv;

    @BeforeEach
    void start() {
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder().ttlSweepInterval(Duration.ofMillis(50)).build());
        kv = KvStores.connect(KvClientConfig.forAddresses(server.address()).build());
        kv.createTable("t", 2);
    }

    @AfterEach
    void stop() {
        kv.close();
        server.close();
    }

    @Test
    void expiredEntriesLeaveTheServerByTheOwnersClock() throws Exception {
        kv.ttl()
                .orElseThrow()
                .registerTtlStates(
                        "t", List.of(new TtlState(STATE, 1_000, TtlState.Layout.VALUE, 0)));
        ShardLease lease = kv.openShard("t", 1);
        kv.write(
                new WriteBatch("t")
                        .put(lease, key("old"), value(100))
                        .put(lease, key("fresh"), value(9_500)));

        // The server's own clock is far past both: only the owner's clock counts.
        kv.ttl().orElseThrow().reportTtlTime(List.of(lease), 5_000).get();
        awaitGone(lease, key("old"));
        assertThat(kv.get(lease, key("fresh"))).isNotNull();

        kv.ttl().orElseThrow().reportTtlTime(List.of(lease), 10_500).get();
        awaitGone(lease, key("fresh"));
    }

    @Test
    void aZombiesClockIsFenced() throws Exception {
        ShardLease zombie = kv.openShard("t", 0);
        kv.openShard("t", 0);
        assertThatThrownBy(() -> kv.ttl().orElseThrow().reportTtlTime(List.of(zombie), 1).get())
                .isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(FencedException.class);
    }

    private void awaitGone(ShardLease lease, byte[] key) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (kv.get(lease, key) != null) {
            assertThat(System.nanoTime()).as("expired within 10 s").isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    private static byte[] key(String name) {
        byte[] suffix = name.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        return ByteBuffer.allocate(4 + suffix.length).putInt(STATE).put(suffix).array();
    }

    private static byte[] value(long timestamp) {
        return ByteBuffer.allocate(12).putLong(timestamp).putInt(1).array();
    }
}
