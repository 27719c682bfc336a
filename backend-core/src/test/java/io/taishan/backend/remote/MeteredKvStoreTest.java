package io.taishan.backend.remote;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.FilterBatch;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.client.TtlState;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.EmbeddedKvServer;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The decorator meters the calls of the store's facets (filters, TTL, admin, durable) as well as
 * its own, passes on only the facets the store has, and its admin facet's close leaves the shared
 * store open.
 */
class MeteredKvStoreTest {
    private static EmbeddedKvServer server;
    private static KvStore store;

    @BeforeAll
    static void start() {
        server = EmbeddedKvServer.start();
        store = KvStores.connect(KvClientConfig.forAddresses(server.address()).build());
    }

    @AfterAll
    static void stop() {
        store.close();
        server.close();
    }

    @Test
    void filterFetchesAndTtlCallsAreMeteredLikeTheStoresOwnCalls() throws Exception {
        Counters counters = new Counters();
        KvStore metered = new MeteredKvStore(store, counters.group("taishan"));
        metered.createTableIfAbsent("metered", 4);
        ShardLease lease = metered.openShard("metered", 1);
        metered.write(new WriteBatch("metered").put(lease, bytes("k"), bytes("v")));

        try (ShardFilter filter = metered.filters().orElseThrow().fetchFilter(lease)) {
            assertThat(filter.version()).isNotNegative();
        }
        ShardLease other = metered.openShard("metered", 0);
        // Passed on as one batch: FetchFilter calls one by one would each count.
        FilterBatch batch = metered.filters().orElseThrow().fetchFilters(List.of(lease, other));
        batch.filters().values().forEach(ShardFilter::close);
        assertThat(batch.filters()).hasSize(2);
        KvStore.Ttl ttl = metered.ttl().orElseThrow();
        ttl.registerTtlStates(
                "metered", List.of(new TtlState(7, 60_000, TtlState.Layout.VALUE, 0)));
        ttl.reportTtlTime(List.of(lease), 1_000).get();
        metered.admin().orElseThrow().describeShards("metered");
        metered.snapshot(List.of(lease), 5, false);
        KvStore.Durable durable = metered.durable().orElseThrow();
        durable.restoreShards(
                "metered", "w", List.of(new ShardRestore(1, "metered", 5)), List.of());
        // No file system serves this scheme: a failed call counts as one, and as an error.
        assertThatThrownBy(
                        () ->
                                durable.uploadSnapshot(
                                        "metered",
                                        5,
                                        new int[] {1},
                                        "no-such-scheme:///s",
                                        "no-such-scheme:///e",
                                        Set.of()))
                .isInstanceOf(KvException.class)
                .hasMessageContaining("no-such-scheme");

        assertThat(counters.count("taishan.rpc.upload_snapshot.count")).isEqualTo(1);
        assertThat(counters.count("taishan.rpc.upload_snapshot.errors")).isEqualTo(1);
        assertThat(counters.count("taishan.rpc.restore.count")).isEqualTo(1);
        assertThat(counters.count("taishan.rpc.fetch_filter.count")).isEqualTo(1);
        assertThat(counters.count("taishan.rpc.fetch_filters.count")).isEqualTo(1);
        assertThat(counters.count("taishan.rpc.ttl.count")).isEqualTo(2);
        assertThat(counters.count("taishan.rpc.open_shard.count")).isEqualTo(2);
        assertThat(counters.count("taishan.rpc.write.count")).isEqualTo(1);
        // createTableIfAbsent and describeShards
        assertThat(counters.count("taishan.rpc.table.count")).isEqualTo(2);
    }

    @Test
    void closingThroughTheAdminFacetLeavesTheSharedStoreOpen() {
        KvStore metered = new MeteredKvStore(store, new UnregisteredMetricsGroup());
        metered.admin().orElseThrow().close(Duration.ZERO);
        metered.close();

        assertThat(store.health()).isNotEmpty();
    }

    @Test
    void aStoreWithoutFacetsHasNoneThroughTheDecoratorEither() {
        // Every call of the bare interface goes to the real store, but not its facets.
        KvStore bare =
                (KvStore)
                        Proxy.newProxyInstance(
                                KvStore.class.getClassLoader(),
                                new Class<?>[] {KvStore.class},
                                (proxy, method, args) ->
                                        method.isDefault()
                                                ? InvocationHandler.invokeDefault(
                                                        proxy, method, args)
                                                : method.invoke(store, args));
        KvStore metered = new MeteredKvStore(bare, new UnregisteredMetricsGroup());

        assertThat(metered.filters()).isEmpty();
        assertThat(metered.ttl()).isEmpty();
        assertThat(metered.admin()).isEmpty();
        assertThat(metered.durable()).isEmpty();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Keeps every counter registered under a group by its dotted path. */
    private static final class Counters {
        private final Map<String, Counter> byName = new HashMap<>();

        MetricGroup group(String path) {
            return new UnregisteredMetricsGroup() {
                @Override
                public MetricGroup addGroup(String name) {
                    return group(path + "." + name);
                }

                @Override
                public <C extends Counter> C counter(String name, C counter) {
                    byName.put(path + "." + name, counter);
                    return counter;
                }
            };
        }

        long count(String name) {
            return byName.get(name).getCount();
        }
    }
}
