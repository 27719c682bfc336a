package io.taishan.kv.server;

import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.util.MutableHandlerRegistry;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.Wire;
import io.taishan.kv.server.durable.CutTransfers;
import io.taishan.kv.server.metrics.ServerMetrics;
import io.taishan.kv.server.rpc.CallExecutors;
import io.taishan.kv.server.rpc.KvGrpcService;
import io.taishan.kv.server.rpc.ShardOwnership;
import io.taishan.kv.server.security.AuthInterceptor;
import io.taishan.kv.server.security.SecurityOptions;
import io.taishan.kv.server.security.ServerTls;
import io.taishan.kv.server.security.TokenStore;
import io.taishan.kv.server.storage.DurableSnapshots;
import io.taishan.kv.server.storage.ExpirySweeper;
import io.taishan.kv.server.storage.StorageEngine;
import io.taishan.kv.server.storage.StorageStartupException;
import java.io.IOException;
import java.io.InputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running kv-server node: the gRPC server over its storage. {@link #close()} shuts down
 * gracefully: new calls are refused, running calls get the grace period, then every open shard is
 * flushed and closed.
 */
public final class KvServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KvServer.class);

    private final KvServerConfig config;
    private final StorageEngine storage;
    private final KvGrpcService service;
    private final ExpirySweeper expiry;
    private final CallExecutors calls;
    @Nullable private final TokenStore tokens;
    @Nullable private final ServerMetrics metrics;
    @Nullable private final CutTransfers durable;
    private final Server grpcServer;
    private final String address;
    private final Object closeLock = new Object();
    private boolean closed;

    private KvServer(
            KvServerConfig config,
            StorageEngine storage,
            KvGrpcService service,
            ExpirySweeper expiry,
            CallExecutors calls,
            @Nullable TokenStore tokens,
            @Nullable ServerMetrics metrics,
            @Nullable CutTransfers durable,
            Server grpcServer,
            String address) {
        this.config = config;
        this.storage = storage;
        this.service = service;
        this.expiry = expiry;
        this.calls = calls;
        this.tokens = tokens;
        this.metrics = metrics;
        this.durable = durable;
        this.grpcServer = grpcServer;
        this.address = address;
    }

    /**
     * Opens the data directory, binds the port and serves.
     *
     * @throws KvServerStartupException with a one-line reason (data dir unusable or in use, port or
     *     metrics port taken, host unknown, a TLS or token file missing, unreadable or malformed, a
     *     key that does not match its certificate)
     */
    public static KvServer start(KvServerConfig config) {
        Path dataDir = Objects.requireNonNull(config.dataDir(), "the config has no data dir");
        InetAddress bindHost;
        try {
            bindHost = InetAddress.getByName(config.host());
        } catch (UnknownHostException e) {
            throw new KvServerStartupException("unknown host '" + config.host() + "'", e);
        }
        SecurityOptions security = config.security();
        // Before the data dir is locked: a bad file is the operator's to fix, nothing to clean up.
        SslContext ssl;
        try {
            ssl = security.tls() ? ServerTls.sslContext(security) : null;
        } catch (IllegalArgumentException e) {
            throw new KvServerStartupException(e.getMessage(), e);
        }
        TokenStore tokens;
        try {
            tokens =
                    security.tokens()
                            ? TokenStore.open(security.tokenFile(), security.tokenReloadInterval())
                            : null;
        } catch (IllegalArgumentException e) {
            throw new KvServerStartupException(e.getMessage(), e);
        }
        // Before the data dir is locked too: a bad directory or key is the operator's to fix.
        CutTransfers durable = null;
        if (config.durable().enabled()) {
            try {
                durable = CutTransfers.start(config.durable());
            } catch (IllegalArgumentException e) {
                closeQuietly(tokens);
                throw new KvServerStartupException(e.getMessage(), e);
            }
        }
        // Before the storage opens: /health answers while the start takes its time.
        ServerMetrics metrics = null;
        if (config.metricsPort() != null) {
            String metricsAddress = config.host() + ":" + config.metricsPort();
            try {
                metrics =
                        ServerMetrics.start(
                                bindHost,
                                config.metricsPort(),
                                config.metricsSampleInterval(),
                                version());
            } catch (IOException | RuntimeException e) {
                closeQuietly(tokens);
                closeQuietly(durable);
                String why =
                        isBindFailure(e) ? "address already in use or not available" : e.toString();
                throw new KvServerStartupException(
                        "cannot listen on metrics port " + metricsAddress + ": " + why, e);
            }
        }
        StorageEngine storage;
        try {
            storage = StorageEngine.open(config.storageOptions(dataDir), metrics != null);
        } catch (StorageStartupException e) {
            closeQuietly(tokens);
            closeQuietly(durable);
            closeQuietly(metrics);
            throw new KvServerStartupException(e.getMessage(), e);
        }
        MutableHandlerRegistry registry = new MutableHandlerRegistry();
        CallExecutors calls = new CallExecutors();
        Server grpc;
        String bindAddress = config.host() + ":" + config.port();
        try {
            InetSocketAddress bind = new InetSocketAddress(bindHost, config.port());
            NettyServerBuilder builder =
                    NettyServerBuilder.forAddress(bind)
                            .fallbackHandlerRegistry(registry)
                            .maxInboundMessageSize(inboundLimit(config))
                            .flowControlWindow(Wire.FLOW_CONTROL_WINDOW_BYTES)
                            // Calls run on the event loop unless CallExecutors moves them.
                            .directExecutor()
                            .callExecutor(calls);
            if (ssl != null) {
                builder.sslContext(ssl);
            }
            grpc = builder.build().start();
        } catch (IOException e) {
            calls.close();
            closeQuietly(tokens);
            closeQuietly(durable);
            storage.close();
            closeQuietly(metrics);
            String why =
                    isBindFailure(e) ? "address already in use or not available" : e.toString();
            throw new KvServerStartupException("cannot listen on " + bindAddress + ": " + why, e);
        } catch (RuntimeException e) {
            calls.close();
            closeQuietly(tokens);
            closeQuietly(durable);
            storage.close();
            closeQuietly(metrics);
            throw new KvServerStartupException(
                    "cannot listen on " + bindAddress + ": " + e.getMessage(), e);
        }
        int port = grpc.getPort();
        String self = advertisedHost(config.host()) + ":" + port;
        ClusterView view = config.clusterView(self);
        ClusterNode me = view.node(view.indexOf(config.nodeName()));
        if (!config.clusterNodes().isEmpty() && !me.address().endsWith(":" + port)) {
            LOG.warn("Node {} is configured as {} but listens on port {}", me.name(), me, port);
        }
        KvGrpcService service =
                new KvGrpcService(
                        storage,
                        new ShardOwnership(view, me.name()),
                        config.limits(),
                        version(),
                        calls,
                        largeValueBudget(config),
                        new DurableSnapshots(storage, durable, me.name() + " (" + self + ")"));
        // The last interceptor runs first: metrics see every call, also those auth refuses.
        List<ServerInterceptor> interceptors = new ArrayList<>();
        if (tokens != null) {
            interceptors.add(new AuthInterceptor(tokens));
        }
        if (metrics != null) {
            interceptors.add(metrics.interceptor());
        }
        registry.addService(ServerInterceptors.intercept(service, interceptors));
        LOG.info(
                "kv-server node {} of cluster view {} ({}) listening on {} with data in {} (WAL {};"
                        + " {})",
                me.name(),
                view.fingerprintHex(),
                view,
                self,
                dataDir.toAbsolutePath(),
                config.walMode(),
                security);
        if (tokens != null) {
            LOG.info(
                    "{} credential(s) from {}, {} of them admin",
                    tokens.current().size(),
                    tokens.file(),
                    tokens.current().adminCount());
            if (ssl == null) {
                LOG.warn(
                        "auth.token-file is set without TLS: bearer tokens cross the network in"
                                + " clear text. Set tls.cert-file and tls.key-file.");
            }
        } else if (security.mutualTls()) {
            LOG.info(
                    "Mutual TLS without auth.token-file: every client with a certificate from"
                            + " tls.client-ca-file may do everything");
        }
        ExpirySweeper expiry =
                new ExpirySweeper(
                        storage, config.ttlSweepInterval(), config.ttlSweepBytesPerSecond());
        expiry.start();
        if (metrics != null) {
            if (durable != null) {
                metrics.durableTransfers(durable.stats());
            }
            metrics.serving(storage, service.writeStats(), expiry, dataDir);
            LOG.info(
                    "Metrics on http://{}:{}/metrics (also /health, /ready)",
                    advertisedHost(config.host()),
                    metrics.port());
        }
        return new KvServer(
                config, storage, service, expiry, calls, tokens, metrics, durable, grpc, self);
    }

    private static void closeQuietly(@Nullable TokenStore tokens) {
        if (tokens != null) {
            tokens.close();
        }
    }

    private static void closeQuietly(@Nullable CutTransfers durable) {
        if (durable != null) {
            durable.close();
        }
    }

    private static void closeQuietly(@Nullable ServerMetrics metrics) {
        if (metrics != null) {
            metrics.close();
        }
    }

    /** Lets requests up to the limit reach our own check, which names the limit. */
    /**
     * large-values.memory-bytes, lowered to half the heap: the rest is for everything else, and a
     * value in transit takes a little more than its size (gRPC's buffers of the chunks in flight).
     */
    static long largeValueBudget(KvServerConfig config) {
        long halfHeap = Runtime.getRuntime().maxMemory() / 2;
        long budget = Math.min(config.largeValueMemoryBytes(), halfHeap);
        if (budget < config.largeValueMemoryBytes()) {
            LOG.warn(
                    "large-values.memory-bytes {} lowered to {} (half the heap, -Xmx)",
                    config.largeValueMemoryBytes(),
                    budget);
        }
        if (budget < config.limits().maxValueBytes()) {
            LOG.warn(
                    "The large-value budget ({} bytes) is below limits.max-value-bytes ({}): a"
                            + " value above the budget is transferred only while no other large"
                            + " value is; raise -Xmx to hold two",
                    budget,
                    config.limits().maxValueBytes());
        }
        return budget;
    }

    private static int inboundLimit(KvServerConfig config) {
        return (int)
                Math.min(Integer.MAX_VALUE, 2L * config.limits().maxRequestBytes() + (1 << 20));
    }

    /** Netty's epoll transport reports EADDRINUSE as its own exception, not a BindException. */
    private static boolean isBindFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof BindException
                    || (t.getMessage() != null
                            && t.getMessage().contains("Address already in use"))) {
                return true;
            }
        }
        return false;
    }

    private static String advertisedHost(String host) {
        try {
            InetAddress addr = InetAddress.getByName(host);
            if (addr.isAnyLocalAddress()) {
                return InetAddress.getLocalHost().getHostName();
            }
        } catch (UnknownHostException e) {
            // fall through: keep what was configured
        }
        return host;
    }

    static String version() {
        try (InputStream in =
                KvServer.class.getResourceAsStream(
                        "/META-INF/maven/io.taishan/taishan-kv-server/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                return p.getProperty("version", "dev");
            }
        } catch (IOException ignored) {
            // fall through
        }
        return "dev";
    }

    /** {@code host:port} clients use to reach this node. */
    public String address() {
        return address;
    }

    public int port() {
        return grpcServer.getPort();
    }

    /**
     * The port of {@code /metrics}, {@code /health} and {@code /ready}; -1 when metrics are off.
     */
    public int metricsPort() {
        return metrics == null ? -1 : metrics.port();
    }

    /** {@code http://host:port} of the metrics endpoint, or null when metrics are off. */
    @Nullable
    public String metricsUrl() {
        return metrics == null
                ? null
                : "http://" + advertisedHost(config.host()) + ":" + metrics.port();
    }

    public KvServerConfig config() {
        return config;
    }

    /**
     * The node's transfers of cuts to and from Flink's checkpoint storage; empty unless {@code
     * durable.enabled}.
     */
    public Optional<CutTransfers> durableTransfers() {
        return Optional.ofNullable(durable);
    }

    /** The storage engine, for tests and tools that need to look under the service. */
    public StorageEngine storage() {
        return storage;
    }

    /** Blocks until the server has shut down. */
    /** Heap bytes values moving in chunks hold now (staged uploads included); for tests. */
    public long largeValueBytesHeld() {
        return service.largeValueBytesHeld();
    }

    /** The most {@link #largeValueBytesHeld} has been since the start; for tests. */
    public long largeValueBytesPeak() {
        return service.largeValueBytesPeak();
    }

    public void awaitTermination() throws InterruptedException {
        grpcServer.awaitTermination();
    }

    @Override
    public void close() {
        synchronized (closeLock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        LOG.info("kv-server {} shutting down", address);
        if (metrics != null) {
            metrics.shuttingDown();
        }
        service.beginShutdown();
        grpcServer.shutdown();
        try {
            if (!grpcServer.awaitTermination(
                    config.shutdownGrace().toMillis(), TimeUnit.MILLISECONDS)) {
                grpcServer.shutdownNow();
                grpcServer.awaitTermination(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            grpcServer.shutdownNow();
            Thread.currentThread().interrupt();
        }
        expiry.close();
        service.close();
        calls.close();
        closeQuietly(tokens);
        // Before the storage: an upload reads a cut's files.
        closeQuietly(durable);
        storage.close();
        closeQuietly(metrics);
        LOG.info("kv-server {} stopped", address);
    }
}
