package io.taishan.kv.server;

import io.taishan.kv.protocol.ClusterNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * In-process kv-server nodes named {@code kv1, kv2, ...} on loopback ports chosen up front, each
 * with its data dir under one directory, so a node can be stopped and started again on its data (a
 * restart with another {@code cluster.nodes}: how an operator changes the cluster) and nodes can be
 * added under new names.
 */
final class LoopbackCluster implements AutoCloseable {
    private final Path dir;
    private final UnaryOperator<KvServerConfig.Builder> tuning;
    private final Map<String, ClusterNode> nodes = new LinkedHashMap<>();
    private final Map<String, EmbeddedKvServer> running = new LinkedHashMap<>();

    private LoopbackCluster(Path dir, UnaryOperator<KvServerConfig.Builder> tuning) {
        this.dir = dir;
        this.tuning = tuning;
    }

    /** {@code count} nodes, each started with every node in its list. */
    static LoopbackCluster start(Path dir, int count) {
        return start(dir, count, b -> b);
    }

    static LoopbackCluster start(
            Path dir, int count, UnaryOperator<KvServerConfig.Builder> tuning) {
        LoopbackCluster cluster = new LoopbackCluster(dir, tuning);
        try {
            for (int i = 0; i < count; i++) {
                cluster.declare();
            }
            for (String name : cluster.nodes.keySet()) {
                cluster.startNode(name, cluster.nodes());
            }
        } catch (RuntimeException e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    /** A new node's name and address, not started: {@code kvN} on a free port. */
    ClusterNode declare() {
        String name = "kv" + (nodes.size() + 1);
        ClusterNode node = new ClusterNode(name, "127.0.0.1:" + unusedPort());
        nodes.put(name, node);
        return node;
    }

    /**
     * The node moves to a new free port (a new machine under the same name), keeping its data dir;
     * stop it first, then start it and restart the others with the new {@link #nodes()}.
     */
    ClusterNode move(String name) {
        ClusterNode node = new ClusterNode(name, "127.0.0.1:" + unusedPort());
        nodes.put(name, node);
        return node;
    }

    /** Every node declared, in declaration order. */
    List<ClusterNode> nodes() {
        return new ArrayList<>(nodes.values());
    }

    ClusterNode node(String name) {
        return nodes.get(name);
    }

    String address(String name) {
        return nodes.get(name).address();
    }

    EmbeddedKvServer server(String name) {
        return running.get(name);
    }

    /** Starts the node on its data dir and port with this node list. */
    EmbeddedKvServer startNode(String name, List<ClusterNode> list) {
        ClusterNode node = nodes.get(name);
        int port = Integer.parseInt(node.address().substring(node.address().lastIndexOf(':') + 1));
        EmbeddedKvServer server =
                EmbeddedKvServer.start(
                        tuning.apply(
                                        KvServerConfig.builder()
                                                .port(port)
                                                .dataDir(dir.resolve(name))
                                                .clusterNodes(list)
                                                .nodeName(name)
                                                .blockCacheBytes(8 << 20)
                                                .writeBufferBytes(8 << 20))
                                .build());
        running.put(name, server);
        return server;
    }

    /** A graceful stop; the node's data stays. */
    void stopNode(String name) {
        EmbeddedKvServer server = running.remove(name);
        if (server != null) {
            server.close();
        }
    }

    /** Stops the node and starts it again on its data with this node list. */
    EmbeddedKvServer restartNode(String name, List<ClusterNode> list) {
        stopNode(name);
        return startNode(name, list);
    }

    @Override
    public void close() {
        for (EmbeddedKvServer server : running.values()) {
            server.close();
        }
        running.clear();
    }

    /**
     * A free port no declared node has: the kernel may hand a just-released port out again, and the
     * declared nodes do not listen yet.
     */
    private int unusedPort() {
        while (true) {
            String address = "127.0.0.1:" + freePort();
            if (nodes.values().stream().noneMatch(n -> n.address().equals(address))) {
                return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
            }
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
