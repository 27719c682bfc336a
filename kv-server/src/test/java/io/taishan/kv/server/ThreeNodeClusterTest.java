package io.taishan.kv.server;

import static io.taishan.kv.server.KvStoreEndToEndTest.b;
import static io.taishan.kv.server.KvStoreEndToEndTest.s;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.NodeHealth;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Three named nodes; the client knows one seed and routes by the cluster's placement. */
class ThreeNodeClusterTest {
    private static final int SHARDS = 12;

    private static List<Integer> freePorts(int n) throws IOException {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            List<Integer> ports = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                sockets.add(socket);
                ports.add(socket.getLocalPort());
            }
            return ports;
        } finally {
            for (ServerSocket socket : sockets) {
                socket.close();
            }
        }
    }

    @Test
    void eachNodeServesItsShardsAndTheClientRoutes() throws IOException {
        List<Integer> ports = freePorts(3);
        List<ClusterNode> members = new ArrayList<>();
        List<String> nodes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            members.add(new ClusterNode("kv" + (i + 1), "127.0.0.1:" + ports.get(i)));
            nodes.add(members.get(i).address());
        }
        ClusterView view = ClusterView.of(members);
        List<EmbeddedKvServer> servers = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                servers.add(
                        EmbeddedKvServer.start(
                                KvServerConfig.builder()
                                        .port(ports.get(i))
                                        .clusterNodes(members)
                                        .nodeName("kv" + (i + 1))
                                        .blockCacheBytes(16 << 20)
                                        .writeBufferBytes(8 << 20)
                                        .build()));
            }
            try (KvStore kv =
                    KvStores.connect(
                            KvClientConfig.forAddresses(nodes.get(1))
                                    .requestTimeout(Duration.ofSeconds(30))
                                    .build())) {
                assertThat(kv.admin().orElseThrow().nodeAddresses()).isEqualTo(nodes);
                assertThat(kv.health())
                        .extracting(NodeHealth::address, NodeHealth::isServing)
                        .containsExactly(
                                tuple(nodes.get(0), true),
                                tuple(nodes.get(1), true),
                                tuple(nodes.get(2), true));

                kv.createTable("t", SHARDS);
                for (EmbeddedKvServer server : servers) {
                    assertThat(server.storage().table("t")).isPresent();
                }
                List<ShardLease> leases = new ArrayList<>();
                WriteBatch batch = new WriteBatch("t");
                for (int shard = 0; shard < SHARDS; shard++) {
                    ShardLease lease = kv.openShard("t", shard);
                    leases.add(lease);
                    batch.put(lease, b("k"), b("shard-" + shard));
                    batch.snapshotMarker(lease, 1, false);
                    batch.put(lease, b("k"), b("later-" + shard));
                }
                assertThat(kv.write(batch).snapshots()).hasSize(SHARDS);
                for (int shard = 0; shard < SHARDS; shard++) {
                    assertThat(s(kv.get(leases.get(shard), b("k")))).isEqualTo("later-" + shard);
                    assertThat(kv.multiGet(leases.get(shard), List.of(b("k"), b("x"))))
                            .extracting(KvStoreEndToEndTest::s)
                            .containsExactly("later-" + shard, null);
                }
                // Keys of every shard, on all three nodes, in one call: one answer per key, in
                // order.
                List<ShardLease> across = new ArrayList<>();
                List<byte[]> acrossKeys = new ArrayList<>();
                List<String> expectedAcross = new ArrayList<>();
                for (int shard = SHARDS - 1; shard >= 0; shard--) {
                    across.add(leases.get(shard));
                    acrossKeys.add(b("k"));
                    expectedAcross.add("later-" + shard);
                    across.add(leases.get(shard));
                    acrossKeys.add(b("x"));
                    expectedAcross.add(null);
                }
                assertThat(kv.multiGetAsync(across, acrossKeys).join())
                        .extracting(KvStoreEndToEndTest::s)
                        .containsExactlyElementsOf(expectedAcross);

                // Each node holds exactly the shards the map gives it.
                for (int node = 0; node < 3; node++) {
                    List<Integer> expected = new ArrayList<>();
                    for (int shard = 0; shard < SHARDS; shard++) {
                        if (view.ownerOf(shard, SHARDS) == node) {
                            expected.add(shard);
                        }
                    }
                    assertThat(servers.get(node).storage().tableStore("t").existingShards())
                            .isEqualTo(expected)
                            .isNotEmpty();
                }

                assertThat(kv.listSnapshots("t"))
                        .extracting(SnapshotInfo::shard)
                        .containsExactlyInAnyOrder(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
                ShardLease restored = kv.restore("t", 11, 1);
                assertThat(s(kv.get(restored, b("k")))).isEqualTo("shard-11");
                ShardLease restoredOnFirstNode = kv.restore("t", 0, 1);
                assertThat(s(kv.get(restoredOnFirstNode, b("k")))).isEqualTo("shard-0");
                assertThat(kv.dropSnapshotsBelow("t", 2)).isEqualTo(SHARDS);
                assertThat(kv.listSnapshots("t")).isEmpty();

                kv.dropTable("t");
                for (EmbeddedKvServer server : servers) {
                    assertThat(server.storage().table("t")).isEmpty();
                }
            }
        } finally {
            for (EmbeddedKvServer server : servers) {
                server.close();
            }
        }
    }
}
