package io.taishan.kv.server;

import static io.taishan.kv.server.KvStoreEndToEndTest.b;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.taishan.bloom.BloomFilter;
import io.taishan.bloom.KeyHash;
import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.FilterBatch;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.FetchFilterResponse;
import io.taishan.kv.proto.FetchFiltersRequest;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.server.metrics.PrometheusText;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * FetchFilters through the real service and client: the filters of many shards in a few calls, each
 * as FetchFilter would give it; a shard that cannot be served refused alone while the others
 * follow; the stream's layout; malformed requests refused whole.
 */
class FilterBatchEndToEndTest {
    private static final String TABLE = "t";
    private static final String CALLS = "taishan_kv_rpc_duration_seconds_count";

    private EmbeddedKvServer server;
    private KvStore kv;

    @BeforeEach
    void start() {
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .metricsPort(0)
                                .metricsSampleInterval(Duration.ZERO)
                                .blockCacheBytes(16 << 20)
                                .writeBufferBytes(16 << 20)
                                .build());
        kv =
                KvStores.connect(
                        KvClientConfig.forAddresses(server.address())
                                .requestTimeout(Duration.ofSeconds(30))
                                .build());
    }

    @AfterEach
    void stop() {
        kv.close();
        server.close();
    }

    private double calls(String method) throws Exception {
        return PrometheusText.scrape("http://127.0.0.1:" + server.metricsPort() + "/metrics")
                .value(CALLS, "method", method, "code", "OK");
    }

    @Test
    void aFewCallsFetchTheFiltersOfThousandsOfShardsAsOneCallEachWould() throws Exception {
        int shards = 1_100;
        kv.createTable(TABLE, shards);
        List<ShardLease> leases =
                kv.openShards(TABLE, IntStream.range(0, shards).toArray(), "writer", false);
        WriteBatch batch = new WriteBatch(TABLE);
        for (ShardLease lease : leases) {
            for (int i = 0; i < 3; i++) {
                batch.put(lease, b("k" + lease.shard() + "-" + i), b("v"));
            }
        }
        kv.write(batch);
        double before = calls("FetchFilters");

        FilterBatch fetched = kv.filters().orElseThrow().fetchFilters(leases);
        try {
            assertThat(fetched.failures()).isEmpty();
            assertThat(fetched.filters()).hasSize(shards);
            // 512 shards a call.
            assertThat(calls("FetchFilters") - before).isEqualTo(3);
            for (ShardLease lease : leases) {
                ShardFilter filter = fetched.filters().get(lease.shard());
                assertThat(filter.lease()).isEqualTo(lease);
                for (int i = 0; i < 3; i++) {
                    assertThat(
                                    filter.filter()
                                            .mightContain(
                                                    KeyHash.hash(b("k" + lease.shard() + "-" + i))))
                            .isTrue();
                }
            }
            for (int shard : new int[] {0, 511, 512, 1_099}) {
                try (ShardFilter alone =
                        kv.filters().orElseThrow().fetchFilter(leases.get(shard))) {
                    ShardFilter inBatch = fetched.filters().get(shard);
                    assertThat(inBatch.version()).isEqualTo(alone.version());
                    assertThat(inBatch.filter().toByteArray())
                            .isEqualTo(alone.filter().toByteArray());
                }
            }
        } finally {
            fetched.filters().values().forEach(ShardFilter::close);
        }
    }

    @Test
    void aShardThatCannotBeServedIsRefusedAloneAndTheOthersFollow() {
        kv.createTable(TABLE, 4);
        List<ShardLease> leases = kv.openShards(TABLE, new int[] {0, 1, 2, 3}, "writer", false);
        kv.write(new WriteBatch(TABLE).put(leases.get(2), b("two"), b("v")));
        ShardLease reopened = kv.openShard(TABLE, 1);

        FilterBatch fetched = kv.filters().orElseThrow().fetchFilters(leases);
        try {
            assertThat(fetched.filters().keySet()).containsExactlyInAnyOrder(0, 2, 3);
            assertThat(fetched.failures().keySet()).containsExactly(1);
            assertThat(fetched.failures().get(1))
                    .isInstanceOf(FencedException.class)
                    .hasMessageContaining("FetchFilters(table t, shard 1)")
                    .hasMessageContaining("epoch " + leases.get(1).epoch());
            assertThat(fetched.filters().get(2).filter().mightContain(KeyHash.hash(b("two"))))
                    .isTrue();
        } finally {
            fetched.filters().values().forEach(ShardFilter::close);
        }
        assertThatThrownBy(
                        () -> kv.filters().orElseThrow().fetchFilters(List.of(reopened, reopened)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("shard 1 twice");
    }

    @Test
    void theStreamNamesEachShardAndRefusesShardsOneByOne() throws Exception {
        kv.createTable(TABLE, 4);
        ShardLease lease = kv.openShard(TABLE, 0);
        ShardLease other = kv.openShard(TABLE, 3);
        kv.write(new WriteBatch(TABLE).put(lease, b("a"), b("1")).put(other, b("b"), b("1")));
        ManagedChannel channel =
                NettyChannelBuilder.forTarget(server.address()).usePlaintext().build();
        try {
            KvServiceGrpc.KvServiceBlockingStub stub =
                    KvServiceGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
            Iterator<FetchFilterResponse> stream =
                    stub.fetchFilters(
                            FetchFiltersRequest.newBuilder()
                                    .setTable(TABLE)
                                    .addShards(ref(0, lease.epoch()))
                                    .addShards(ref(3, other.epoch() + 1))
                                    .addShards(ref(7, 1))
                                    .addShards(ref(3, other.epoch()).toBuilder().setShard(-1))
                                    .build());
            List<FetchFilterResponse> all = new ArrayList<>();
            stream.forEachRemaining(all::add);

            // Shard 0: its header, then chunks that add up to a filter with its key.
            assertThat(all.get(0).getHeader().getShard()).isEqualTo(0);
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            int i = 1;
            while (all.get(i).hasChunk()) {
                all.get(i++).getChunk().writeTo(bytes);
            }
            assertThat((long) bytes.size()).isEqualTo(all.get(0).getHeader().getSerializedBytes());
            try (BloomFilter filter = BloomFilter.fromBytes(bytes.toByteArray())) {
                assertThat(filter.mightContain(KeyHash.hash(b("a")))).isTrue();
            }
            // Then one refusal per shard that cannot be served, in request order.
            assertThat(all.subList(i, all.size()))
                    .extracting(r -> r.getRefused().getShard() + " " + r.getRefused().getCode())
                    .containsExactly(
                            "3 " + ErrorCode.FENCED,
                            "7 " + ErrorCode.SHARD_OUT_OF_RANGE,
                            "-1 " + ErrorCode.INVALID_ARGUMENT);

            // What concerns the whole call fails it.
            assertThatThrownBy(
                            () ->
                                    stub.fetchFilters(
                                                    FetchFiltersRequest.newBuilder()
                                                            .setTable(TABLE)
                                                            .addShards(ref(0, lease.epoch()))
                                                            .addShards(ref(0, lease.epoch()))
                                                            .build())
                                            .hasNext())
                    .isInstanceOf(StatusRuntimeException.class)
                    .hasMessageContaining("INVALID_ARGUMENT")
                    .hasMessageContaining("shard 0 twice");
            assertThatThrownBy(
                            () ->
                                    stub.fetchFilters(
                                                    FetchFiltersRequest.newBuilder()
                                                            .setTable("missing")
                                                            .addShards(ref(0, 1))
                                                            .build())
                                            .hasNext())
                    .isInstanceOf(StatusRuntimeException.class)
                    .satisfies(
                            e ->
                                    assertThat(((StatusRuntimeException) e).getStatus().getCode())
                                            .isEqualTo(Status.Code.NOT_FOUND));
        } finally {
            channel.shutdownNow();
        }
    }

    private static ShardRef ref(int shard, long epoch) {
        return ShardRef.newBuilder().setShard(shard).setEpoch(epoch).build();
    }
}
