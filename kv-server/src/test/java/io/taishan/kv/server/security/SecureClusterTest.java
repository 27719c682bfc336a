package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.AuthenticationException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvClientTls;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.PermissionDeniedException;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.testing.TestCertificates;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two nodes, both with TLS and the same token file: the client learns the second node from the
 * first and reaches it with the same credentials; a scoped token is refused on both.
 */
class SecureClusterTest {
    private static final String ADMIN = "admin-0123456789abcdef0123";
    private static final String TEAM_A = "team-a-0123456789abcdef012";

    @TempDir Path dir;

    @Test
    void everyNodeIsReachedWithTheSameCredentialsAndChecksThem() throws IOException {
        TestCertificates certs = TestCertificates.create(dir.resolve("certs"));
        Path tokens =
                Files.writeString(dir.resolve("tokens"), ADMIN + " *\n" + TEAM_A + " team_a_\n");
        List<Integer> ports = freePorts(2);
        List<String> nodes = List.of("127.0.0.1:" + ports.get(0), "localhost:" + ports.get(1));
        List<ClusterNode> members =
                List.of(new ClusterNode("kv1", nodes.get(0)), new ClusterNode("kv2", nodes.get(1)));
        // A shard of a 4-shard table that lives on the second node.
        int onSecond = 0;
        while (ClusterView.of(members).ownerOf(onSecond, 4) != 1) {
            onSecond++;
        }
        int remote = onSecond;
        List<EmbeddedKvServer> servers = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                servers.add(
                        EmbeddedKvServer.start(
                                KvServerConfig.builder()
                                        .port(ports.get(i))
                                        .clusterNodes(members)
                                        .nodeName(members.get(i).name())
                                        .blockCacheBytes(8 << 20)
                                        .writeBufferBytes(8 << 20)
                                        .tlsCertFile(certs.server().certFile())
                                        .tlsKeyFile(certs.server().keyFile())
                                        .authTokenFile(tokens)
                                        .build()));
            }
            try (KvStore admin = connect(nodes.get(0), certs, ADMIN);
                    KvStore a = connect(nodes.get(0), certs, TEAM_A)) {
                assertThat(a.admin().orElseThrow().nodeAddresses()).isEqualTo(nodes);
                a.createTable("team_a_t", 4);
                admin.createTable("team_b_t", 4);
                ShardLease mine = a.openShard("team_a_t", remote);
                a.write(new WriteBatch("team_a_t").put(mine, b("k"), b("v")));
                assertThat(a.get(mine, b("k"))).isEqualTo(b("v"));
                assertThat(a.listTables()).extracting(TableInfo::name).containsExactly("team_a_t");
                ShardLease theirs = admin.openShard("team_b_t", remote);
                assertThatThrownBy(() -> a.get(theirs, b("k")))
                        .isInstanceOf(PermissionDeniedException.class);
                assertThatThrownBy(() -> a.dropTable("team_b_t"))
                        .isInstanceOf(PermissionDeniedException.class);
                assertThat(admin.describeTable("team_b_t")).isPresent();
            }
            // The second node checks on its own.
            assertThatThrownBy(() -> connect(nodes.get(1), certs, TEAM_A + "x"))
                    .isInstanceOf(AuthenticationException.class)
                    .hasMessageContaining(nodes.get(1));
        } finally {
            servers.forEach(EmbeddedKvServer::close);
        }
    }

    private static KvStore connect(String seed, TestCertificates certs, String token) {
        return KvStores.connect(
                KvClientConfig.forAddresses(seed)
                        .tls(KvClientTls.trusting(certs.caCert()))
                        .token(token)
                        .build());
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

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
}
