package io.taishan.kv.client;

import static io.taishan.kv.client.WriteBatchTest.b;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.taishan.bloom.KeyHash;
import io.taishan.kv.proto.ErrorCode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link GrpcKvStore} as its {@link KvStore.Filters} facet: the filter stream decoded from many
 * chunks, a stream broken half-way retried whole, unavailability and fencing typed and not retried,
 * bad streams refused, and the filter version of each written shard in the write result.
 */
class GrpcKvStoreFilterTest {
    private ScriptedCluster cluster;
    private ScriptedKvService server;
    private GrpcKvStore store;
    private ShardLease lease;
    private final List<byte[]> keys = new ArrayList<>();

    @BeforeEach
    void setUp() {
        cluster = ScriptedCluster.start(1);
        server = cluster.node(0);
        server.setFilterChunkBytes(100);
        store =
                GrpcKvStore.connect(
                        KvClientConfig.forAddresses(cluster.address(0))
                                .requestTimeout(Duration.ofSeconds(5))
                                .maxAttempts(3)
                                .backoff(Duration.ofMillis(1), Duration.ofMillis(10))
                                .build());
        store.createTable("t", 4);
        lease = store.openShard("t", 1);
        WriteBatch batch = new WriteBatch("t");
        for (int i = 0; i < 500; i++) {
            byte[] key = b("key-" + i);
            keys.add(key);
            batch.put(lease, key, b("v"));
        }
        store.write(batch);
    }

    @AfterEach
    void tearDown() {
        store.close();
        cluster.close();
    }

    @Test
    void fetchDecodesTheChunksIntoTheServersFilter() {
        server.setFilterVersion(7);
        try (ShardFilter fetched = store.fetchFilter(lease)) {
            assertThat(fetched.lease()).isEqualTo(lease);
            assertThat(fetched.version()).isEqualTo(7);
            for (byte[] key : keys) {
                assertThat(fetched.filter().mightContain(KeyHash.hash(key))).isTrue();
            }
            // 1,000 keys at 1%: over a kilobyte, so the 100-byte chunks were many.
            assertThat(fetched.filter().serializedSizeBytes()).isGreaterThan(1000);
        }
        assertThat(server.calls("FetchFilter")).isEqualTo(1);
    }

    @Test
    void aStreamBrokenHalfWayIsFetchedAgainWhole() {
        server.breakNextFilterStreams(2, 3);

        try (ShardFilter fetched = store.fetchFilter(lease)) {
            for (byte[] key : keys) {
                assertThat(fetched.filter().mightContain(KeyHash.hash(key))).isTrue();
            }
        }
        assertThat(server.calls("FetchFilter")).isEqualTo(3);
    }

    @Test
    void anUnavailableFilterIsTypedAndNotRetried() {
        server.failNext("FetchFilter", 1, Status.Code.UNAVAILABLE, ErrorCode.FILTER_UNAVAILABLE);

        assertThatThrownBy(() -> store.fetchFilter(lease))
                .isInstanceOf(FilterUnavailableException.class)
                .hasMessageContaining("FetchFilter(table t, shard 1)")
                .satisfies(
                        e ->
                                assertThat(((KvException) e).code())
                                        .isEqualTo(ErrorCode.FILTER_UNAVAILABLE));
        assertThat(server.calls("FetchFilter")).isEqualTo(1);
        // Later it is there.
        try (ShardFilter fetched = store.fetchFilter(lease)) {
            assertThat(fetched.filter().mightContain(KeyHash.hash(keys.get(0)))).isTrue();
        }
    }

    @Test
    void aStaleLeaseIsFenced() {
        ShardLease newer = store.openShard("t", 1);

        assertThatThrownBy(() -> store.fetchFilter(lease)).isInstanceOf(FencedException.class);
        try (ShardFilter fetched = store.fetchFilter(newer)) {
            assertThat(fetched.lease().epoch()).isEqualTo(newer.epoch());
        }
    }

    @Test
    void aStreamThatDisagreesWithItsHeaderIsRefused() {
        server.setFilterSizeSkew(1);

        assertThatThrownBy(() -> store.fetchFilter(lease))
                .isInstanceOf(KvException.class)
                .hasMessageContaining("FetchFilter(table t, shard 1): the header announced")
                .hasMessageContaining(cluster.address(0));
    }

    @Test
    void writesReportEachShardsFilterVersion() {
        ShardLease other = store.openShard("t", 2);
        server.setFilterVersion(3);

        WriteResult result =
                store.write(
                        new WriteBatch("t").put(lease, b("x"), b("1")).put(other, b("y"), b("2")));

        assertThat(result.filterVersion(1)).isEqualTo(OptionalLong.of(3));
        assertThat(result.filterVersion(2)).isEqualTo(OptionalLong.of(3));
        assertThat(result.filterVersion(0)).isEmpty();
        assertThat(result.snapshots()).isEmpty();
    }
}
