package io.taishan.kv.server.metrics;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.grpc.ServerInterceptor;
import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.server.durable.TransferStats;
import io.taishan.kv.server.rpc.WriteStats;
import io.taishan.kv.server.storage.ExpirySweeper;
import io.taishan.kv.server.storage.StorageEngine;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The metrics endpoint of one node: a registry of its own (several nodes may share a JVM in tests),
 * Prometheus' HTTP server on {@code metrics.port}, the RPC interceptor, and the node's state for
 * {@code /health} and {@code /ready}.
 *
 * <p>Started before the storage opens, so {@code /health} answers while a start takes time and
 * {@code /ready} says when the node serves; {@link #shuttingDown()} turns both to 503 as soon as a
 * shutdown begins, and {@link #close()} stops the port after the storage has closed.
 */
public final class ServerMetrics implements AutoCloseable {
    /** Where the node is in its life, as {@code /health} and {@code /ready} report it. */
    enum Phase {
        STARTING,
        SERVING,
        SHUTTING_DOWN
    }

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final RpcMetricsInterceptor rpc;
    private final NodeCollector node;
    private final HTTPServer http;
    private volatile Phase phase = Phase.STARTING;

    private ServerMetrics(InetAddress host, int port, Duration sampleInterval, String version)
            throws IOException {
        this.rpc = new RpcMetricsInterceptor(registry, KvServiceGrpc.getServiceDescriptor());
        this.node = new NodeCollector(sampleInterval);
        registry.register(node);
        Info.builder()
                .name("taishan_kv_build_info")
                .help("The kv-server's version")
                .labelNames("version")
                .register(registry)
                .addLabelValues(version);
        JvmMetrics.builder().register(registry);
        this.http =
                HTTPServer.builder()
                        .inetAddress(host)
                        .port(port)
                        .registry(registry)
                        .defaultHandler(new HealthHandler())
                        .buildAndStart();
    }

    /**
     * Binds the port and serves {@code /metrics}, {@code /health} and {@code /ready}.
     *
     * @param port 0 for an ephemeral one ({@link #port()} tells which)
     * @param sampleInterval how long a walk of the data dir and a RocksDB sample are reused
     * @throws IOException when the port cannot be bound
     */
    public static ServerMetrics start(
            InetAddress host, int port, Duration sampleInterval, String version)
            throws IOException {
        return new ServerMetrics(host, port, sampleInterval, version);
    }

    /** Outermost on the service: every call is counted, also those refused by authentication. */
    public ServerInterceptor interceptor() {
        return rpc;
    }

    /** The node moves cuts to and from Flink's checkpoint storage: report its transfers. */
    public void durableTransfers(TransferStats stats) {
        registry.register(new DurableTransferCollector(stats));
    }

    /** The node serves: its storage is reported and {@code /ready} answers 200. */
    public void serving(
            StorageEngine storage, WriteStats writes, ExpirySweeper expiry, Path dataDir) {
        node.attach(new NodeCollector.Sources(storage, writes, expiry, dataDir));
        phase = Phase.SERVING;
    }

    /**
     * A shutdown began: {@code /health} and {@code /ready} answer 503, and the storage is no longer
     * read (once this returns, no scrape is reading it).
     */
    public void shuttingDown() {
        phase = Phase.SHUTTING_DOWN;
        node.detach();
    }

    /** The bound port. */
    public int port() {
        return http.getPort();
    }

    /** Stops the HTTP server; afterwards the port refuses connections. */
    @Override
    public void close() {
        phase = Phase.SHUTTING_DOWN;
        node.detach();
        http.close();
    }

    /**
     * {@code /health}: 200 while the process is up and not shutting down (also while it starts),
     * {@code /ready}: 200 only while it serves with its storage open; 503 otherwise, each with a
     * one-line JSON body. Anything else but {@code /} is 404.
     */
    private final class HealthHandler implements HttpHandler {
        @Override
        public void handle(HttpExchange exchange) throws IOException {
            try (exchange) {
                exchange.getRequestBody().readAllBytes();
                String path = exchange.getRequestURI().getPath();
                Phase now = phase;
                int code;
                String body;
                String type = "application/json";
                switch (path) {
                    case "/health" -> {
                        boolean alive = now != Phase.SHUTTING_DOWN;
                        code = alive ? 200 : 503;
                        body = "{\"status\":\"" + now + "\"}\n";
                    }
                    case "/ready" -> {
                        boolean ready = now == Phase.SERVING;
                        code = ready ? 200 : 503;
                        body = "{\"ready\":" + ready + ",\"status\":\"" + now + "\"}\n";
                    }
                    case "/" -> {
                        code = 200;
                        type = "text/plain; charset=utf-8";
                        body =
                                "taishan kv-server: /metrics (Prometheus text), /health"
                                        + " (liveness), /ready (readiness)\n";
                    }
                    default -> {
                        code = 404;
                        type = "text/plain; charset=utf-8";
                        body = "not found: " + path + "\n";
                    }
                }
                byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().set("Content-Type", type);
                boolean head = "HEAD".equals(exchange.getRequestMethod());
                exchange.sendResponseHeaders(code, head ? -1 : bytes.length);
                if (!head) {
                    try (OutputStream out = exchange.getResponseBody()) {
                        out.write(bytes);
                    }
                }
            }
        }
    }
}
