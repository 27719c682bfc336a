package io.taishan.kv.server;

import static io.taishan.kv.server.DurableNode.read;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableRestore;
import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.server.storage.DurableFiles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three named nodes with checkpoint storage on {@code file://}: one node's disk is lost and the
 * node replaced under the same name, empty; a restore of the whole table (two writers, as two
 * subtasks would) brings every key back exactly, the replaced node downloading its shards' cuts and
 * the other two, which hold their snapshots, downloading nothing.
 */
class DurableClusterTest {
    private static final String TABLE = "t";
    private static final int SHARDS = 32;

    @TempDir Path dir;

    @Test
    void aReplacedNodeFetchesItsShardsAndTheOthersDownloadNothing() throws Exception {
        try (LoopbackCluster cluster =
                LoopbackCluster.start(dir, 3, b -> b.durable(DurableNode.fileStorage()))) {
            int[] first = IntStream.range(0, SHARDS / 2).toArray();
            int[] second = IntStream.range(SHARDS / 2, SHARDS).toArray();
            DurableNode.Model model = new DurableNode.Model(11);
            Map<Integer, TreeMap<String, String>> atSnapshot;
            DurableSnapshot snapshot;
            try (KvStore kv = connect(cluster.address("kv1"))) {
                kv.createTable(TABLE, SHARDS);
                List<ShardLease> a = kv.openShards(TABLE, first, "subtask-0", false);
                List<ShardLease> b = kv.openShards(TABLE, second, "subtask-1", false);
                model.write(kv, a, 100, 100);
                model.write(kv, b, 100, 100);
                kv.snapshot(a, 3, false);
                kv.snapshot(b, 3, false);
                atSnapshot = model.copy();
                snapshot =
                        kv.durable()
                                .orElseThrow()
                                .uploadSnapshot(
                                        TABLE,
                                        3,
                                        IntStream.range(0, SHARDS).toArray(),
                                        dir.resolve("checkpoints/shared").toUri().toString(),
                                        dir.resolve("checkpoints/chk-3").toUri().toString(),
                                        Set.of());
                // Every node uploads its own cuts: one per (node, writer) with shards there.
                assertThat(snapshot.cuts()).hasSizeBetween(3, 6);
                assertThat(snapshot.cuts().stream().mapToInt(c -> c.shards().size()).sum())
                        .isEqualTo(SHARDS);
                model.write(kv, a, 20, 100); // lost with the failover
            }
            ClusterView view = ClusterView.of(cluster.nodes());
            List<Integer> onKv2 = new ArrayList<>();
            for (int s = 0; s < SHARDS; s++) {
                if (view.owner(s, SHARDS).name().equals("kv2")) {
                    onKv2.add(s);
                }
            }
            assertThat(onKv2).isNotEmpty();

            cluster.stopNode("kv2");
            DurableFiles.deleteTree(dir.resolve("kv2"));
            cluster.startNode("kv2", cluster.nodes());

            try (KvStore kv = connect(cluster.address("kv3"))) {
                KvStore.Durable durable = kv.durable().orElseThrow();
                // The replaced node lacks the table: the client makes it there on first use.
                DurableRestore r1 =
                        durable.restoreShards(
                                TABLE, "subtask-0", restores(first, snapshot), snapshot.cuts());
                DurableRestore r2 =
                        durable.restoreShards(
                                TABLE, "subtask-1", restores(second, snapshot), snapshot.cuts());

                List<ShardLease> leases = new ArrayList<>(r1.leases());
                leases.addAll(r2.leases());
                assertThat(read(kv, leases)).isEqualTo(atSnapshot);
                assertThat(r1.downloadedBytes() + r2.downloadedBytes())
                        .isEqualTo(downloaded(cluster, "kv2"))
                        .isPositive();
                assertThat(downloaded(cluster, "kv1")).isZero();
                assertThat(downloaded(cluster, "kv3")).isZero();
            }
        }
    }

    private static List<ShardRestore> restores(int[] shards, DurableSnapshot snapshot) {
        Map<Integer, String> cutOf = new HashMap<>();
        for (DurableCut cut : snapshot.cuts()) {
            cut.shards().forEach(s -> cutOf.put(s, cut.cutId()));
        }
        List<ShardRestore> restores = new ArrayList<>();
        for (int s : shards) {
            restores.add(new ShardRestore(s, TABLE, 3, cutOf.get(s)));
        }
        return restores;
    }

    private static long downloaded(LoopbackCluster cluster, String node) {
        return cluster.server(node)
                .server()
                .durableTransfers()
                .orElseThrow()
                .stats()
                .downloadedBytes();
    }

    private static KvStore connect(String seed) {
        return KvStores.connect(
                KvClientConfig.forAddresses(seed).requestTimeout(Duration.ofSeconds(30)).build());
    }
}
