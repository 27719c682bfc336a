package io.taishan.kv.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardNotOwnedException;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.client.SnapshotNotFoundException;
import io.taishan.kv.client.UnownedShards;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.ScanRange;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Several named nodes on loopback, placed by rendezvous hashing: a client that knows one seed
 * serves every shard from its owner; a node added (each node restarted with the new list, as an
 * operator does it) takes about a quarter of the shards, the client picks up the new view, and a
 * restore of a moved shard on its new owner fails saying why.
 */
class ElasticClusterTest {
    private static final int SHARDS = 128;

    @TempDir Path dir;

    private static KvStore connect(String seed) {
        return KvStores.connect(
                KvClientConfig.forAddresses(seed).requestTimeout(Duration.ofSeconds(30)).build());
    }

    private static int[] all() {
        return IntStream.range(0, SHARDS).toArray();
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String s(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    @Test
    void aClientWithOneSeedReadsAndWritesEveryShardOnItsOwner() {
        try (LoopbackCluster cluster = LoopbackCluster.start(dir, 3);
                KvStore kv = connect(cluster.address("kv2"))) {
            ClusterView view = ClusterView.of(cluster.nodes());
            assertThat(kv.admin().orElseThrow().clusterView()).isEqualTo(view);
            kv.createTable("t", SHARDS);
            List<ShardLease> leases = kv.openShards("t", all(), "writer-1", false);
            WriteBatch batch = new WriteBatch("t");
            for (ShardLease lease : leases) {
                assertThat(lease.node()).isEqualTo(view.owner(lease.shard(), SHARDS).name());
                batch.put(lease, b("k"), b("v" + lease.shard()));
                batch.put(lease, b("k2"), b("w" + lease.shard()));
            }
            kv.write(batch);
            for (ShardLease lease : leases) {
                assertThat(s(kv.get(lease, b("k")))).isEqualTo("v" + lease.shard());
                assertThat(kv.multiGet(lease, List.of(b("k2"), b("x"))))
                        .extracting(ElasticClusterTest::s)
                        .containsExactly("w" + lease.shard(), null);
                try (CloseableIterator<KvEntry> it = kv.scan(lease, ScanRange.all(), 0, false)) {
                    assertThat(it.next().key()).isEqualTo(b("k"));
                    assertThat(it.next().key()).isEqualTo(b("k2"));
                    assertThat(it.hasNext()).isFalse();
                }
            }
            // Each node holds exactly the shards the placement gives it.
            for (ClusterNode node : cluster.nodes()) {
                List<Integer> expected = new ArrayList<>();
                for (int s = 0; s < SHARDS; s++) {
                    if (view.owner(s, SHARDS).equals(node)) {
                        expected.add(s);
                    }
                }
                assertThat(cluster.server(node.name()).storage().tableStore("t").existingShards())
                        .as("shards on %s", node.name())
                        .isEqualTo(expected)
                        .isNotEmpty();
            }
        }
    }

    /**
     * A node replaced at a new address under its name (its data kept), every node restarted with
     * the list that says so: nothing refuses a shard, since the old address just does not answer. A
     * connected client's next call that takes shards asks the cluster when it cannot reach a node
     * and goes to the node's new address.
     */
    @Test
    void aNodeThatMovedToANewAddressIsFoundByTheNextCallThatTakesShards() {
        try (LoopbackCluster cluster = LoopbackCluster.start(dir, 3);
                KvStore kv = connect(cluster.address("kv1"))) {
            kv.createTable("t", SHARDS);
            List<ShardLease> leases = kv.openShards("t", all(), "writer-1", false);
            WriteBatch batch = new WriteBatch("t");
            for (ShardLease lease : leases) {
                batch.put(lease, b("k"), b("v" + lease.shard())).snapshotMarker(lease, 1, false);
            }
            kv.write(batch);

            cluster.stopNode("kv2");
            String oldAddress = cluster.address("kv2");
            ClusterNode moved = cluster.move("kv2");
            cluster.startNode("kv2", cluster.nodes());
            cluster.restartNode("kv1", cluster.nodes());
            cluster.restartNode("kv3", cluster.nodes());
            ClusterView now = ClusterView.of(cluster.nodes());
            assertThat(moved.address()).isNotEqualTo(oldAddress);

            List<ShardRestore> restores = new ArrayList<>();
            for (int s = 0; s < SHARDS; s++) {
                restores.add(new ShardRestore(s, "t", 1));
            }
            List<ShardLease> restored = kv.restoreShards("t", "writer-2", restores);
            assertThat(kv.admin().orElseThrow().clusterView()).isEqualTo(now);
            assertThat(restored).extracting(ShardLease::node).contains("kv2");
            for (ShardLease lease : restored) {
                assertThat(s(kv.get(lease, b("k"))))
                        .as("shard %d on %s", lease.shard(), lease.node())
                        .isEqualTo("v" + lease.shard());
            }
        }
    }

    @Test
    void aFourthNodeTakesAboutAQuarterOfTheShardsAndTheClientFollows() {
        try (LoopbackCluster cluster = LoopbackCluster.start(dir, 3);
                KvStore kv = connect(cluster.address("kv1"))) {
            ClusterView three = ClusterView.of(cluster.nodes());
            kv.createTable("t", SHARDS);
            List<ShardLease> leases = kv.openShards("t", all(), "writer-1", false);
            WriteBatch batch = new WriteBatch("t");
            for (ShardLease lease : leases) {
                batch.put(lease, b("k"), b("v" + lease.shard())).snapshotMarker(lease, 1, false);
            }
            kv.write(batch);

            // The operator starts kv4 with the new list: while the others still have the old
            // one, a client that asks kv4 is told the nodes disagree, naming both views.
            ClusterNode kv4 = cluster.declare();
            List<ClusterNode> fourNodes = cluster.nodes();
            ClusterView four = ClusterView.of(fourNodes);
            cluster.startNode("kv4", fourNodes);
            assertThatThrownBy(() -> connect(kv4.address()))
                    .isInstanceOf(KvException.class)
                    .hasMessageContaining("a change of cluster.nodes under way")
                    .hasMessageContaining(four.fingerprintHex())
                    .hasMessageContaining(three.fingerprintHex());

            // ... then restarts the others with it, one after the other.
            for (String name : List.of("kv1", "kv2", "kv3")) {
                cluster.restartNode(name, fourNodes);
            }
            List<Integer> moved = new ArrayList<>();
            for (int s = 0; s < SHARDS; s++) {
                if (!three.owner(s, SHARDS).name().equals(four.owner(s, SHARDS).name())) {
                    assertThat(four.owner(s, SHARDS)).isEqualTo(kv4);
                    moved.add(s);
                }
            }
            assertThat(moved.size()).isBetween(SHARDS / 8, SHARDS * 3 / 8);
            ShardLease stayed = leases.get(firstNotIn(moved));
            ShardLease left = leases.get(moved.get(0));

            // A shard that stayed is served under its lease: a clean restart keeps leases.
            assertThat(s(kv.get(stayed, b("k")))).isEqualTo("v" + stayed.shard());
            // One that moved: its old owner refuses, naming the new owner, and the client
            // learns the new view from that refusal.
            assertThatThrownBy(() -> kv.get(left, b("k")))
                    .isInstanceOfSatisfying(
                            ShardNotOwnedException.class,
                            e -> {
                                assertThat(e.nodeView()).isEqualTo(four.fingerprintHex());
                                assertThat(e.getMessage())
                                        .contains("is owned by kv4")
                                        .contains("the cluster changed");
                            });
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!kv.admin().orElseThrow().clusterView().equals(four)) {
                assertThat(System.nanoTime()).as("the client's view").isLessThan(deadline);
                Thread.onSpinWait();
            }
            assertThat(kv.admin().orElseThrow().nodeAddresses())
                    .containsExactly(
                            cluster.address("kv1"),
                            cluster.address("kv2"),
                            cluster.address("kv3"),
                            kv4.address());
            // The old lease is now refused by the client itself: another node owns the shard.
            assertThatThrownBy(() -> kv.get(left, b("k")))
                    .isInstanceOf(ShardNotOwnedException.class)
                    .hasMessageContaining("was taken on " + left.node())
                    .hasMessageContaining("kv4 owns the shard");

            // A restore of the moved shards on kv4 finds no snapshot there, and says why.
            List<ShardRestore> restores = new ArrayList<>();
            for (int s : moved) {
                restores.add(new ShardRestore(s, "t", 1));
            }
            assertThatThrownBy(() -> kv.restoreShards("t", "writer-2", restores))
                    .isInstanceOf(SnapshotNotFoundException.class)
                    .hasMessageContaining("kv4 has no snapshot at all of table 't' shard")
                    .hasMessageContaining("Changing the cluster");

            // The stayed shards restore where they are; the moved ones start empty on kv4,
            // which got the table when its first shard was taken there.
            List<ShardRestore> stayedRestores = new ArrayList<>();
            List<Integer> stayedShards = new ArrayList<>();
            for (int s = 0; s < SHARDS; s++) {
                if (!moved.contains(s)) {
                    stayedRestores.add(new ShardRestore(s, "t", 1));
                    stayedShards.add(s);
                }
            }
            List<ShardLease> restored = kv.restoreShards("t", "writer-2", stayedRestores);
            assertThat(s(kv.get(restored.get(0), b("k")))).isEqualTo("v" + stayedShards.get(0));
            List<ShardLease> fresh =
                    kv.openShards(
                            "t",
                            moved.stream().mapToInt(Integer::intValue).toArray(),
                            "writer-2",
                            false);
            WriteBatch again = new WriteBatch("t");
            for (ShardLease lease : fresh) {
                assertThat(lease.node()).isEqualTo("kv4");
                assertThat(kv.get(lease, b("k"))).isNull();
                again.put(lease, b("k"), b("new" + lease.shard()));
            }
            kv.write(again);
            assertThat(s(kv.get(fresh.get(0), b("k")))).isEqualTo("new" + moved.get(0));

            // The moved shards' old data stays where it was, reported as unowned there.
            List<Integer> unowned = new ArrayList<>();
            for (UnownedShards u : kv.admin().orElseThrow().unownedShards("t")) {
                if (u.node().name().equals("kv4")) {
                    assertThat(u.shards()).isEmpty();
                }
                unowned.addAll(u.shards());
            }
            assertThat(unowned).containsExactlyInAnyOrderElementsOf(moved);
        }
    }

    private static int firstNotIn(List<Integer> moved) {
        int s = 0;
        while (moved.contains(s)) {
            s++;
        }
        return s;
    }
}
