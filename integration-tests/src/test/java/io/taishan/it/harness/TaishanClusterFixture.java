package io.taishan.it.harness;

import io.taishan.kv.testing.KvServerProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.util.FileUtils;

/**
 * The Taishan backend on a cluster of named kv-server nodes ({@code kv1, kv2, ...}), each a child
 * JVM ({@link KvServerProcess}) on a loopback port chosen up front, with durable checkpoints on.
 * The cluster is changed as docs/operations.md, <i>Changing the cluster</i>, tells an operator to:
 * a node's {@code cluster.nodes} is read at start only, so a change writes the new list into every
 * node's config file and restarts the nodes with it (SIGTERM, one at a time). A lost node is
 * SIGKILLed and its data directory deleted; it is then replaced under its name and port, or
 * removed. Jobs get every current node as a seed.
 */
public final class TaishanClusterFixture implements BackendFixture {
    private static final Pattern DOWNLOADED_BYTES =
            Pattern.compile(
                    "^taishan_kv_durable_transferred_bytes_total\\{direction=\"download\"\\}"
                            + " (\\S+)$",
                    Pattern.MULTILINE);

    /** A node of the cluster: its name, where it serves, where it keeps its data. */
    private record Node(String name, int port, int metricsPort, Path dataDir, Path configFile) {
        String address() {
            return "127.0.0.1:" + port;
        }
    }

    private final Path workDir;
    private final Map<String, Node> members = new LinkedHashMap<>();
    private final Map<String, KvServerProcess> running = new LinkedHashMap<>();
    private final HttpClient http = HttpClient.newHttpClient();
    private int declared;

    private TaishanClusterFixture(Path workDir) {
        this.workDir = workDir;
    }

    /** {@code count} nodes with {@code durable.enabled}, each listing all of them. */
    public static TaishanClusterFixture startDurable(Path workDir, int count) throws IOException {
        Files.createDirectories(workDir);
        TaishanClusterFixture cluster = new TaishanClusterFixture(workDir);
        try {
            for (int i = 0; i < count; i++) {
                cluster.declare();
            }
            for (String name : cluster.nodeNames()) {
                cluster.startNode(name);
            }
        } catch (RuntimeException | IOException e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    /** The names of the cluster's nodes, as every node's {@code cluster.nodes} lists them. */
    public List<String> nodeNames() {
        return List.copyOf(members.keySet());
    }

    /**
     * SIGKILL, then the data directory deleted as a lost disk would be; the node stays in every
     * other node's {@code cluster.nodes}.
     */
    public void loseNode(String name) throws IOException {
        Node node = member(name);
        KvServerProcess process = running.remove(name);
        if (process != null) {
            process.kill();
        }
        FileUtils.deleteDirectoryQuietly(node.dataDir().toFile());
        if (Files.exists(node.dataDir())) {
            throw new IOException("could not delete " + node.dataDir());
        }
    }

    /** {@link #loseNode}, then an empty node started under the same name, port and list. */
    public void loseNodeAndStartAnEmptyOne(String name) throws IOException {
        loseNode(name);
        startNode(name);
    }

    /**
     * {@link #loseNode}, then an empty node started under the same name at a new address (a new
     * machine), and every other node restarted with the list that says so.
     */
    public void loseNodeAndStartAnEmptyOneElsewhere(String name) throws IOException {
        loseNode(name);
        Node old = member(name);
        members.put(
                name,
                new Node(name, freePort(), old.metricsPort(), old.dataDir(), old.configFile()));
        startNode(name);
        for (String other : nodeNames()) {
            if (!other.equals(name)) {
                restartNode(other);
            }
        }
    }

    /**
     * Takes the node out of the cluster: its entry out of every other node's {@code cluster.nodes},
     * each of them restarted with the new list; the node itself is stopped, if it still runs, last.
     */
    public void removeNode(String name) throws IOException {
        member(name);
        members.remove(name);
        restartAll();
        KvServerProcess process = running.remove(name);
        if (process != null) {
            process.stop();
        }
    }

    /**
     * Adds a node under a new name: started with the new list, then every other node restarted with
     * it. Returns its name.
     */
    public String addNode() throws IOException {
        String name = declare();
        startNode(name);
        for (String other : nodeNames()) {
            if (!other.equals(name)) {
                restartNode(other);
            }
        }
        return name;
    }

    /**
     * Bytes this node's current process downloaded from checkpoint storage, from its {@code
     * /metrics} ({@code taishan_kv_durable_transferred_bytes_total{direction="download"}}).
     */
    public long downloadedBytes(String name) throws IOException, InterruptedException {
        Node node = member(name);
        process(name).checkAlive();
        HttpResponse<String> response =
                http.send(
                        HttpRequest.newBuilder(
                                        URI.create(
                                                "http://127.0.0.1:"
                                                        + node.metricsPort()
                                                        + "/metrics"))
                                .timeout(Duration.ofSeconds(30))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        Matcher m = DOWNLOADED_BYTES.matcher(response.body());
        if (response.statusCode() != 200 || !m.find()) {
            throw new IllegalStateException(
                    "no downloaded bytes in the metrics of "
                            + name
                            + " (HTTP "
                            + response.statusCode()
                            + "):\n"
                            + response.body());
        }
        return (long) Double.parseDouble(m.group(1));
    }

    /** What the node printed last, for failure messages. */
    public String serverOutput(String name) {
        return process(name).recentOutput();
    }

    @Override
    public Configuration configuration() {
        List<String> seeds = new ArrayList<>();
        for (Map.Entry<String, KvServerProcess> e : running.entrySet()) {
            e.getValue().checkAlive();
            if (members.containsKey(e.getKey())) {
                seeds.add(e.getValue().address());
            }
        }
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, TaishanBackendFixture.FACTORY_CLASS);
        config.setString(TaishanBackendFixture.ADDRESS_KEY, String.join(",", seeds));
        config.setString(TaishanBackendFixture.DURABLE_KEY, "true");
        return config;
    }

    @Override
    public String keyedBackendClassName() {
        return TaishanBackendFixture.KEYED_BACKEND_CLASS;
    }

    /** As the single node: restores clone or roll back remote snapshots. */
    @Override
    public boolean restoresByMetadata() {
        return true;
    }

    @Override
    public void close() {
        RuntimeException failure = null;
        for (KvServerProcess process : running.values()) {
            try {
                process.close();
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
        }
        running.clear();
        if (failure != null) {
            throw failure;
        }
    }

    private String declare() {
        declared++;
        String name = "kv" + declared;
        members.put(
                name,
                new Node(
                        name,
                        freePort(),
                        freePort(),
                        workDir.resolve(name + "-data"),
                        workDir.resolve(name + ".properties")));
        return name;
    }

    /** Writes the node's config with the current list and starts it; returns once it serves. */
    private void startNode(String name) throws IOException {
        Node node = member(name);
        String nodes =
                members.values().stream()
                        .map(n -> n.name() + "=" + n.address())
                        .collect(Collectors.joining(","));
        Files.writeString(
                node.configFile(),
                "durable.enabled = true\n"
                        + "cluster.nodes = "
                        + nodes
                        + "\n"
                        + "cluster.node-name = "
                        + name
                        + "\n");
        running.put(
                name,
                KvServerProcess.start(
                        node.dataDir(),
                        "--port",
                        Integer.toString(node.port()),
                        "--metrics-port",
                        Integer.toString(node.metricsPort()),
                        "--config",
                        node.configFile().toString()));
    }

    /** SIGTERM (the server flushes), then started again on its data with the current list. */
    private void restartNode(String name) throws IOException {
        KvServerProcess process = running.remove(name);
        if (process != null) {
            process.stop();
        }
        startNode(name);
    }

    private void restartAll() throws IOException {
        for (String name : nodeNames()) {
            restartNode(name);
        }
    }

    private Node member(String name) {
        Node node = members.get(name);
        if (node == null) {
            throw new IllegalArgumentException(name + " is not a node of " + members.keySet());
        }
        return node;
    }

    private KvServerProcess process(String name) {
        KvServerProcess process = running.get(name);
        if (process == null) {
            throw new IllegalStateException(name + " is not running");
        }
        return process;
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
