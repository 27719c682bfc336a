package io.taishan.kv.client;

import static io.taishan.kv.client.WriteBatchTest.b;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.taishan.kv.protocol.ScanRange;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Which connection each call takes: reads never share one with writes (where they would queue
 * behind a large batch's frames), and take the read connections in turn. Told apart by the client's
 * address as the server sees it.
 */
class GrpcKvStoreChannelsTest {
    private final Map<String, Set<SocketAddress>> peersByMethod = new ConcurrentHashMap<>();
    private ScriptedKvService service;
    private Server server;
    private String address;

    @BeforeEach
    void setUp() throws Exception {
        service = new ScriptedKvService(ScriptedKvService.generousLimits(), 2);
        ServerInterceptor recorder =
                new ServerInterceptor() {
                    @Override
                    public <Q, R> ServerCall.Listener<Q> interceptCall(
                            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
                        peersByMethod
                                .computeIfAbsent(
                                        call.getMethodDescriptor().getBareMethodName(),
                                        m -> ConcurrentHashMap.newKeySet())
                                .add(call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
                        return next.startCall(call, headers);
                    }
                };
        server =
                NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                        .addService(ServerInterceptors.intercept(service, recorder))
                        .build()
                        .start();
        address = "127.0.0.1:" + server.getPort();
        service.setCluster(List.of(address), 0);
    }

    @AfterEach
    void tearDown() throws InterruptedException {
        service.releaseAll();
        server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }

    @Test
    void readsTakeTheReadConnectionsInTurnAndWritesTheirOwn() throws Exception {
        try (GrpcKvStore store =
                GrpcKvStore.connect(KvClientConfig.forAddresses(address).readChannels(3).build())) {
            store.createTable("t", 1);
            ShardLease lease = store.openShard("t", 0);
            store.write(new WriteBatch("t").put(lease, b("a"), b("1")).put(lease, b("b"), b("2")));
            store.writeAsync(new WriteBatch("t").put(lease, b("c"), b("3"))).get();
            for (int i = 0; i < 3; i++) {
                assertThat(store.get(lease, b("a"))).isEqualTo(b("1"));
            }
            assertThat(store.multiGet(lease, List.of(b("a"), b("b")))).hasSize(2);
            // Two pages of two entries: two Scan calls.
            try (CloseableIterator<KvEntry> it = store.scan(lease, ScanRange.all(), 2, false)) {
                int n = 0;
                while (it.hasNext()) {
                    it.next();
                    n++;
                }
                assertThat(n).isEqualTo(3);
            }
        }

        Set<SocketAddress> bulk = peersOf("ClusterInfo", "CreateTable", "OpenShard", "Write");
        Set<SocketAddress> reads = peersOf("Get", "MultiGet", "Scan");
        assertThat(bulk).hasSize(1);
        assertThat(peersByMethod.get("Get")).hasSize(3);
        assertThat(reads).hasSize(3).doesNotContainAnyElementsOf(bulk);
    }

    @Test
    void oneReadChannelIsOneConnectionForEveryRead() throws Exception {
        try (GrpcKvStore store =
                GrpcKvStore.connect(KvClientConfig.forAddresses(address).readChannels(1).build())) {
            store.createTable("t", 1);
            ShardLease lease = store.openShard("t", 0);
            store.write(new WriteBatch("t").put(lease, b("a"), b("1")));
            for (int i = 0; i < 4; i++) {
                store.get(lease, b("a"));
            }
        }

        assertThat(peersOf("Get")).hasSize(1).doesNotContainAnyElementsOf(peersOf("Write"));
    }

    private Set<SocketAddress> peersOf(String... methods) {
        Set<SocketAddress> peers = new HashSet<>();
        for (String method : methods) {
            peers.addAll(peersByMethod.getOrDefault(method, Set.of()));
        }
        return peers;
    }
}
