package io.taishan.kv.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * {@code cluster} against three real nodes: every node with its view, each node's shards of each
 * table as ranges; a node down is shown unreachable and fails the command.
 */
class ClusterCommandTest {
    private static final int SHARDS = 16;

    @Test
    void showsEveryNodeAndWhichShardsEachOwnsThenANodeDown() throws IOException {
        List<ClusterNode> nodes = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            nodes.add(new ClusterNode("kv" + i, "127.0.0.1:" + freePort()));
        }
        ClusterView view = ClusterView.of(nodes);
        List<EmbeddedKvServer> servers = new ArrayList<>();
        try {
            for (ClusterNode node : nodes) {
                servers.add(
                        EmbeddedKvServer.start(
                                KvServerConfig.builder()
                                        .port(port(node))
                                        .clusterNodes(nodes)
                                        .nodeName(node.name())
                                        .blockCacheBytes(8 << 20)
                                        .writeBufferBytes(8 << 20)
                                        .build()));
            }
            try (KvStore kv =
                    KvStores.connect(KvClientConfig.forAddresses(nodes.get(1).address()).build())) {
                kv.createTable("t", SHARDS);
                kv.openShards("t", IntStream.range(0, SHARDS).toArray(), "w", false);
            }

            AdminRun r = AdminRun.of(nodes.get(2).address(), "cluster");

            assertThat(r.err()).isEmpty();
            assertThat(r.exit()).isZero();
            List<String> lines = r.out().lines().toList();
            assertThat(lines.get(0))
                    .isEqualTo(
                            "view "
                                    + view.fingerprintHex()
                                    + ": 3 node(s), every node answers with it");
            for (ClusterNode node : nodes) {
                assertThat(cells(r.out(), node.address()))
                        .containsExactly(node.name(), node.address(), "yes", view.fingerprintHex());
            }
            int owned = 0;
            for (ClusterNode node : nodes) {
                List<Integer> mine = new ArrayList<>();
                for (int s = 0; s < SHARDS; s++) {
                    if (view.owner(s, SHARDS).equals(node)) {
                        mine.add(s);
                    }
                }
                owned += mine.size();
                List<String> row = tableRow(r.out(), node.name());
                assertThat(row.subList(row.size() - 3, row.size()))
                        .containsExactly(String.valueOf(mine.size()), Formats.ranges(mine), "-");
            }
            assertThat(owned).isEqualTo(SHARDS);
            assertThat(r.out()).contains("1 table(s)");

            servers.get(2).close();
            AdminRun down = AdminRun.of(nodes.get(0).address(), "--timeout-ms", "2000", "cluster");
            assertThat(down.exit()).isEqualTo(AdminCommands.EXIT_FAILED);
            assertThat(down.out()).contains("NOT every node answers with it");
            assertThat(cells(down.out(), nodes.get(2).address()).subList(0, 4))
                    .containsExactly("kv3", nodes.get(2).address(), "no", "-");
            assertThat(down.out()).contains("per-table placement left out");
        } finally {
            servers.forEach(EmbeddedKvServer::close);
        }
    }

    @Test
    void compactRanges() {
        assertThat(Formats.ranges(List.of())).isEqualTo("-");
        assertThat(Formats.ranges(List.of(3))).isEqualTo("3");
        assertThat(Formats.ranges(List.of(0, 1, 2, 7, 9, 10, 11))).isEqualTo("0-2,7,9-11");
        assertThat(Formats.ranges(List.of(4, 6))).isEqualTo("4,6");
    }

    /** The cells of the one line that contains {@code cell}. */
    private static List<String> cells(String out, String cell) {
        List<List<String>> rows =
                out.lines()
                        .map(l -> Arrays.asList(l.trim().split("\\s+")))
                        .filter(row -> row.contains(cell))
                        .toList();
        assertThat(rows).as("lines with %s in%n%s", cell, out).hasSize(1);
        return rows.get(0);
    }

    /** The row of the placement table for this node (the table's name only on its first row). */
    private static List<String> tableRow(String out, String node) {
        List<List<String>> rows =
                out.lines()
                        .map(l -> Arrays.asList(l.trim().split("\\s+")))
                        .filter(row -> row.contains(node) && !row.get(1).contains(":"))
                        .toList();
        assertThat(rows).as("placement rows of %s in%n%s", node, out).hasSize(1);
        return rows.get(0);
    }

    private static int port(ClusterNode node) {
        return Integer.parseInt(node.address().substring(node.address().lastIndexOf(':') + 1));
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
