package io.taishan.kv.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.grpc.Status;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class GrpcKvStoreConnectTest {
    /** Far above what any case here needs; only a hang would reach it. */
    private static final Duration HANG_GUARD = Duration.ofSeconds(60);

    static KvClientConfig config(String addresses, int attempts) {
        return KvClientConfig.forAddresses(addresses)
                .requestTimeout(Duration.ofSeconds(2))
                .maxAttempts(attempts)
                .backoff(Duration.ofMillis(5), Duration.ofMillis(20))
                .build();
    }

    static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    @Test
    void nobodyListeningFailsAfterMaxAttemptsNamingTheAddress() throws IOException {
        String address = "127.0.0.1:" + closedPort();

        KvUnavailableException e =
                assertTimeoutPreemptively(
                        HANG_GUARD,
                        () ->
                                catchThrowableOfType(
                                        () -> GrpcKvStore.connect(config(address, 4)),
                                        KvUnavailableException.class));

        assertThat(e).isNotNull();
        assertThat(e.attempts()).isEqualTo(4);
        assertThat(e.address()).isEqualTo(address);
        assertThat(e.getMessage()).contains(address).contains("4 attempt");
        assertThat(Status.fromThrowable(e.getCause()).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    }

    @Test
    void everyAttemptReallyReconnects() throws Exception {
        AtomicInteger connections = new AtomicInteger();
        try (ServerSocket hangUp = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread acceptor =
                    new Thread(
                            () -> {
                                while (!hangUp.isClosed()) {
                                    try (Socket s = hangUp.accept()) {
                                        connections.incrementAndGet();
                                    } catch (IOException closed) {
                                        return;
                                    }
                                }
                            });
            acceptor.setDaemon(true);
            acceptor.start();
            String address = "127.0.0.1:" + hangUp.getLocalPort();

            KvUnavailableException e =
                    assertTimeoutPreemptively(
                            HANG_GUARD,
                            () ->
                                    catchThrowableOfType(
                                            () -> GrpcKvStore.connect(config(address, 3)),
                                            KvUnavailableException.class));

            assertThat(e.attempts()).isEqualTo(3);
            // The client may give up before the acceptor thread has counted the last connection.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (connections.get() < 3 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(connections.get()).isEqualTo(3);
        }
    }

    @Test
    void allSeedsDownNamesEverySeed() throws IOException {
        String first = "127.0.0.1:" + closedPort();
        String second = "127.0.0.1:" + closedPort();

        assertThatThrownBy(() -> GrpcKvStore.connect(config(first + "," + second, 2)))
                .isInstanceOf(KvUnavailableException.class)
                .hasMessageContaining(first)
                .hasMessageContaining(second);
    }

    @Test
    void triesTheNextSeedWhenOneIsDown() throws IOException {
        try (ScriptedCluster cluster = ScriptedCluster.start(1);
                GrpcKvStore store =
                        GrpcKvStore.connect(
                                config(
                                        "127.0.0.1:" + closedPort() + "," + cluster.address(0),
                                        2))) {
            assertThat(store.nodeAddresses()).containsExactly(cluster.address(0));
            assertThat(store.limits().maxKeyBytes()).isEqualTo(1024);
        }
    }

    @Test
    void learnsEveryNodeFromOneSeed() {
        try (ScriptedCluster cluster = ScriptedCluster.start(3);
                GrpcKvStore store = GrpcKvStore.connect(config(cluster.address(1), 1))) {
            assertThat(store.nodeAddresses()).isEqualTo(cluster.addresses());
            for (int i = 0; i < 3; i++) {
                assertThat(cluster.node(i).calls("ClusterInfo")).isEqualTo(1);
            }
        }
    }

    @Test
    void theSeedKeepsTheSpellingItWasGiven() {
        try (ScriptedCluster cluster = ScriptedCluster.start(1)) {
            String spelled = "localhost:" + cluster.address(0).split(":")[1];
            try (GrpcKvStore store = GrpcKvStore.connect(config(spelled, 1))) {
                assertThat(store.nodeAddresses()).containsExactly(spelled);
                assertThat(store.listTables()).isEmpty();
            }
        }
    }

    @Test
    void nodesThatDisagreeOnTheNodeListAreRejected() throws IOException {
        try (ScriptedCluster cluster = ScriptedCluster.start(2)) {
            String stranger = "127.0.0.1:" + closedPort();
            cluster.node(1).setCluster(List.of(cluster.address(0), stranger), 1);

            assertThatThrownBy(() -> GrpcKvStore.connect(config(cluster.address(0), 1)))
                    .isInstanceOf(KvException.class)
                    .hasMessageContaining("misconfigured")
                    .hasMessageContaining(stranger)
                    .hasMessageContaining(cluster.address(1));
        }
    }

    @Test
    void aListedNodeThatDoesNotAnswerFailsTheConnect() throws Exception {
        try (ScriptedCluster cluster = ScriptedCluster.start(2)) {
            cluster.stopNode(1);

            KvUnavailableException e =
                    catchThrowableOfType(
                            () -> GrpcKvStore.connect(config(cluster.address(0), 2)),
                            KvUnavailableException.class);
            assertThat(e.address()).isEqualTo(cluster.address(1));
            assertThat(e.attempts()).isEqualTo(2);
        }
    }

    @Test
    void aServerThatIsNotTaishanFailsClearly() throws IOException {
        io.grpc.Server other =
                io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder.forAddress(
                                new java.net.InetSocketAddress("127.0.0.1", 0))
                        .build()
                        .start();
        try {
            String address = "127.0.0.1:" + other.getPort();
            assertThatThrownBy(() -> GrpcKvStore.connect(config(address, 3)))
                    .isInstanceOf(KvException.class)
                    .isNotInstanceOf(KvUnavailableException.class)
                    .hasMessageContaining("UNIMPLEMENTED")
                    .hasMessageContaining(address);
        } finally {
            other.shutdownNow();
        }
    }
}
