package io.taishan.kv.client;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.taishan.kv.proto.Limits;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** {@link ScriptedKvService} nodes on ephemeral loopback ports, each knowing the full node list. */
public final class ScriptedCluster implements AutoCloseable {
    private final List<Server> servers = new ArrayList<>();
    private final List<ScriptedKvService> services = new ArrayList<>();
    private final List<String> addresses = new ArrayList<>();

    private ScriptedCluster() {}

    public static ScriptedCluster start(int nodeCount, Limits limits, int defaultScanPage) {
        ScriptedCluster cluster = new ScriptedCluster();
        try {
            for (int i = 0; i < nodeCount; i++) {
                ScriptedKvService service = new ScriptedKvService(limits, defaultScanPage);
                Server server =
                        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                                .addService(service)
                                .build()
                                .start();
                cluster.servers.add(server);
                cluster.services.add(service);
                cluster.addresses.add("127.0.0.1:" + server.getPort());
            }
        } catch (IOException e) {
            cluster.close();
            throw new UncheckedIOException(e);
        }
        for (int i = 0; i < nodeCount; i++) {
            cluster.services.get(i).setCluster(cluster.addresses, i);
        }
        return cluster;
    }

    public static ScriptedCluster start(int nodeCount) {
        return start(nodeCount, ScriptedKvService.generousLimits(), 1000);
    }

    public ScriptedKvService node(int index) {
        return services.get(index);
    }

    public String address(int index) {
        return addresses.get(index);
    }

    public List<String> addresses() {
        return List.copyOf(addresses);
    }

    /** Stops one node, as a crash would, leaving its port closed. */
    public void stopNode(int index) throws InterruptedException {
        services.get(index).releaseAll();
        servers.get(index).shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        services.forEach(ScriptedKvService::releaseAll);
        for (Server server : servers) {
            server.shutdownNow();
        }
        for (Server server : servers) {
            try {
                server.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
