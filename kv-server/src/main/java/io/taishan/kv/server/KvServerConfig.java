package io.taishan.kv.server;

import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.server.durable.DurableOptions;
import io.taishan.kv.server.security.SecurityOptions;
import io.taishan.kv.server.storage.FilterOptions;
import io.taishan.kv.server.storage.SnapshotCacheOptions;
import io.taishan.kv.server.storage.StorageOptions;
import io.taishan.kv.server.storage.WalMode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import javax.annotation.Nullable;

/**
 * Everything a kv-server node is started with. Build with {@link #builder()}; a config file is a
 * Java properties file read by {@link Builder#properties(Properties)}; its keys, defaults and
 * meanings are declared in {@link KvServerOptions} (reference: docs/config/kv-server-options.md).
 */
public final class KvServerConfig {
    /** The smallest request limit that still carries a batch. */
    static final int MIN_REQUEST_BYTES = 64 << 10;

    /** The name of a single node whose {@code cluster.node-name} is not set. */
    public static final String DEFAULT_NODE_NAME = "kv1";

    /** Defaults of the request limits. */
    public static final KvLimits DEFAULT_LIMITS =
            new KvLimits(64 << 10, 512 << 20, 32 << 20, 100_000, 10_000, 1 << 20, 1 << 20);

    /**
     * The largest value a node may be configured for: a Java array holds at most 2 GiB, and a large
     * value costs its size about three times over while it is written (see the README).
     */
    static final int MAX_VALUE_BYTES_LIMIT = 1 << 30;

    private final String host;
    private final int port;
    @Nullable private final Path dataDir;
    private final List<ClusterNode> clusterNodes;
    @Nullable private final String nodeName;
    private final KvLimits limits;
    private final StorageOptions storage;
    private final Duration shutdownGrace;
    private final Duration ttlSweepInterval;
    private final long ttlSweepBytesPerSecond;
    private final long largeValueMemoryBytes;
    private final SecurityOptions security;
    @Nullable private final Integer metricsPort;
    private final Duration metricsSampleInterval;
    private final DurableOptions durable;

    private KvServerConfig(Builder b) {
        this.host = b.host;
        this.port = b.port;
        this.dataDir = b.dataDir;
        this.clusterNodes = List.copyOf(b.clusterNodes);
        this.nodeName = b.nodeName;
        this.limits =
                new KvLimits(
                        b.maxKeyBytes,
                        b.maxValueBytes,
                        b.maxRequestBytes,
                        b.maxOpsPerRequest,
                        b.maxScanPageEntries,
                        b.maxScanPageBytes,
                        // A cap below the inline limit lowers it: every value inline.
                        Math.min(b.maxInlineValueBytes, b.maxValueBytes));
        this.storage =
                new StorageOptions(
                        b.dataDir == null ? Path.of(".") : b.dataDir,
                        WalMode.of(b.walEnabled, b.walSync),
                        b.blockCacheBytes,
                        b.writeBufferBytes,
                        b.storeWriteBufferBytes,
                        b.backgroundThreads,
                        b.maxOpenFilesPerStore,
                        b.storeIdleClose,
                        b.maxOpenStores,
                        new FilterOptions(
                                b.filterTargetFpp,
                                b.filterMaxShardBytes,
                                b.filterMaxMemoryBytes,
                                b.filterRebuildThreads,
                                b.filterRebuildBytesPerSecond,
                                b.filterMaxConcurrentFetches),
                        new SnapshotCacheOptions(b.localSnapshotsPerShard, b.localSnapshotMaxAge));
        this.shutdownGrace = b.shutdownGrace;
        this.ttlSweepInterval = b.ttlSweepInterval;
        this.ttlSweepBytesPerSecond = b.ttlSweepBytesPerSecond;
        this.largeValueMemoryBytes = b.largeValueMemoryBytes;
        this.security = b.security();
        this.metricsPort = b.metricsPort;
        this.metricsSampleInterval = b.metricsSampleInterval;
        this.durable = b.durable();
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.host = host;
        b.port = port;
        b.dataDir = dataDir;
        b.clusterNodes = new ArrayList<>(clusterNodes);
        b.nodeName = nodeName;
        b.limits(limits);
        b.walEnabled = storage.walEnabled();
        b.walSync = storage.walMode() == WalMode.SYNC;
        b.blockCacheBytes = storage.blockCacheBytes();
        b.writeBufferBytes = storage.writeBufferBytes();
        b.storeWriteBufferBytes = storage.storeWriteBufferBytes();
        b.backgroundThreads = storage.backgroundThreads();
        b.maxOpenFilesPerStore = storage.maxOpenFilesPerStore();
        b.storeIdleClose = storage.storeIdleClose();
        b.maxOpenStores = storage.maxOpenStores();
        b.filters(storage.filters());
        b.localSnapshotsPerShard = storage.snapshotCache().keepPerShard();
        b.localSnapshotMaxAge = storage.snapshotCache().maxAge();
        b.shutdownGrace = shutdownGrace;
        b.ttlSweepInterval = ttlSweepInterval;
        b.ttlSweepBytesPerSecond = ttlSweepBytesPerSecond;
        b.largeValueMemoryBytes = largeValueMemoryBytes;
        b.security(security);
        b.metricsPort = metricsPort;
        b.metricsSampleInterval = metricsSampleInterval;
        b.durable(durable);
        return b;
    }

    public String host() {
        return host;
    }

    /** 0 for an ephemeral port. */
    public int port() {
        return port;
    }

    /** Null only for an {@link EmbeddedKvServer}, which then uses a temporary directory. */
    @Nullable
    public Path dataDir() {
        return dataDir;
    }

    /** Every node of the cluster (as configured, in any order); empty for a single node. */
    public List<ClusterNode> clusterNodes() {
        return clusterNodes;
    }

    /** This node's name: its entry in {@link #clusterNodes()}, or the single node's name. */
    public String nodeName() {
        return nodeName == null ? DEFAULT_NODE_NAME : nodeName;
    }

    /**
     * The cluster as this node sees it, with this node at {@code selfAddress} when it is a single
     * node (whose address is known only once it listens).
     */
    public ClusterView clusterView(String selfAddress) {
        return clusterNodes.isEmpty()
                ? ClusterView.single(nodeName(), selfAddress)
                : ClusterView.of(clusterNodes);
    }

    public KvLimits limits() {
        return limits;
    }

    public boolean walEnabled() {
        return storage.walEnabled();
    }

    public WalMode walMode() {
        return storage.walMode();
    }

    /** The storage options, for a data directory. */
    public StorageOptions storageOptions(Path dir) {
        return storage.withDataDir(dir);
    }

    public Duration shutdownGrace() {
        return shutdownGrace;
    }

    /** How often expired entries of TTL'd states are swept out of the live shards. */
    public Duration ttlSweepInterval() {
        return ttlSweepInterval;
    }

    /** What all expiry sweeps of the node may read per second together (0: no limit). */
    public long ttlSweepBytesPerSecond() {
        return ttlSweepBytesPerSecond;
    }

    /**
     * The heap that values read or written in chunks may hold at once (as configured; the server
     * lowers it at start to what its heap allows).
     */
    public long largeValueMemoryBytes() {
        return largeValueMemoryBytes;
    }

    /** The metrics endpoint's port (0: ephemeral), or null when it is off (the default). */
    @Nullable
    public Integer metricsPort() {
        return metricsPort;
    }

    /** How long a walk of the data dir and a sample of RocksDB properties serve scrapes. */
    public Duration metricsSampleInterval() {
        return metricsSampleInterval;
    }

    /** How the shards' Bloom filters are sized, bounded and rebuilt. */
    public FilterOptions filters() {
        return storage.filters();
    }

    /** TLS and token authentication (the {@code tls.*} and {@code auth.*} keys). */
    public SecurityOptions security() {
        return security;
    }

    /** Cuts in Flink's checkpoint storage (the {@code durable.*} keys); on by default. */
    public DurableOptions durable() {
        return durable;
    }

    @Override
    public String toString() {
        return "KvServerConfig{host="
                + host
                + ", port="
                + port
                + ", dataDir="
                + dataDir
                + ", clusterNodes="
                + clusterNodes
                + ", nodeName="
                + nodeName()
                + ", limits="
                + limits
                + ", storage="
                + storage
                + ", shutdownGrace="
                + shutdownGrace
                + ", security="
                + security
                + ", metricsPort="
                + metricsPort
                + ", durable="
                + durable
                + '}';
    }

    /** Builder with the defaults that {@link KvServerOptions} documents. */
    public static final class Builder {
        private String host = "127.0.0.1";
        private int port = 0;
        @Nullable private Path dataDir;
        private List<ClusterNode> clusterNodes = new ArrayList<>();
        @Nullable private String nodeName;
        private int maxKeyBytes = DEFAULT_LIMITS.maxKeyBytes();
        private int maxValueBytes = DEFAULT_LIMITS.maxValueBytes();
        private int maxRequestBytes = DEFAULT_LIMITS.maxRequestBytes();
        private int maxOpsPerRequest = DEFAULT_LIMITS.maxOpsPerRequest();
        private int maxScanPageEntries = DEFAULT_LIMITS.maxScanPageEntries();
        private int maxScanPageBytes = DEFAULT_LIMITS.maxScanPageBytes();
        private int maxInlineValueBytes = DEFAULT_LIMITS.maxInlineValueBytes();
        private long largeValueMemoryBytes = 768L << 20;
        private boolean walEnabled;
        private boolean walSync;
        private long blockCacheBytes;
        private long writeBufferBytes;
        private long storeWriteBufferBytes;
        private int backgroundThreads;
        private int maxOpenFilesPerStore;
        private Duration storeIdleClose;
        private int maxOpenStores;
        private double filterTargetFpp;
        private long filterMaxShardBytes;
        private long filterMaxMemoryBytes;
        private int filterRebuildThreads;
        private long filterRebuildBytesPerSecond;
        private int filterMaxConcurrentFetches;
        private Duration shutdownGrace = Duration.ofSeconds(10);
        private Duration ttlSweepInterval = Duration.ofMinutes(1);
        private long ttlSweepBytesPerSecond = 32L << 20;
        @Nullable private Path tlsCertFile;
        @Nullable private Path tlsKeyFile;
        @Nullable private Path tlsClientCaFile;
        @Nullable private Path authTokenFile;
        private Duration authReloadInterval = SecurityOptions.DEFAULT_RELOAD_INTERVAL;
        @Nullable private Integer metricsPort;
        private Duration metricsSampleInterval = Duration.ofSeconds(15);
        private boolean durableEnabled = true;
        @Nullable private Path durableFlinkConfDir;
        private Map<String, String> durableFlinkConfig = new TreeMap<>();
        @Nullable private Path durablePluginsDir;
        private int durableTransferThreads = DurableOptions.DEFAULT_TRANSFER_THREADS;
        private int durableMaxAttempts = DurableOptions.DEFAULT_MAX_ATTEMPTS;
        private Duration durableRetryBackoff = DurableOptions.DEFAULT_RETRY_BACKOFF;
        private Duration durableTransferTimeout = DurableOptions.DEFAULT_TRANSFER_TIMEOUT;
        private int localSnapshotsPerShard = SnapshotCacheOptions.DEFAULTS.keepPerShard();
        private Duration localSnapshotMaxAge = SnapshotCacheOptions.DEFAULTS.maxAge();

        private Builder() {
            StorageOptions d = StorageOptions.defaults(Path.of("."));
            walEnabled = d.walEnabled();
            walSync = d.walMode() == WalMode.SYNC;
            blockCacheBytes = d.blockCacheBytes();
            writeBufferBytes = d.writeBufferBytes();
            storeWriteBufferBytes = d.storeWriteBufferBytes();
            backgroundThreads = d.backgroundThreads();
            maxOpenFilesPerStore = d.maxOpenFilesPerStore();
            storeIdleClose = d.storeIdleClose();
            maxOpenStores = d.maxOpenStores();
            filters(d.filters());
        }

        public Builder host(String host) {
            this.host = Objects.requireNonNull(host, "host");
            return this;
        }

        public Builder port(int port) {
            this.port = port;
            return this;
        }

        public Builder dataDir(@Nullable Path dataDir) {
            this.dataDir = dataDir;
            return this;
        }

        /** Every node of the cluster, this one included ({@link #nodeName}). */
        public Builder clusterNodes(List<ClusterNode> nodes) {
            this.clusterNodes = new ArrayList<>(nodes);
            return this;
        }

        /** Every node of the cluster, as {@code cluster.nodes} writes them. */
        public Builder clusterNodes(String list) {
            try {
                return clusterNodes(ClusterView.parse(list).nodes());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("cluster.nodes: " + e.getMessage(), e);
            }
        }

        /** This node's name in {@link #clusterNodes}, or the name of a single node. */
        public Builder nodeName(@Nullable String name) {
            this.nodeName = name;
            return this;
        }

        public Builder walEnabled(boolean walEnabled) {
            this.walEnabled = walEnabled;
            return this;
        }

        /** Whether every write waits for the WAL's fsync; needs the WAL enabled. */
        public Builder walSync(boolean walSync) {
            this.walSync = walSync;
            return this;
        }

        public Builder limits(KvLimits limits) {
            this.maxKeyBytes = limits.maxKeyBytes();
            this.maxValueBytes = limits.maxValueBytes();
            this.maxRequestBytes = limits.maxRequestBytes();
            this.maxOpsPerRequest = limits.maxOpsPerRequest();
            this.maxScanPageEntries = limits.maxScanPageEntries();
            this.maxScanPageBytes = limits.maxScanPageBytes();
            this.maxInlineValueBytes = limits.maxInlineValueBytes();
            return this;
        }

        public Builder maxKeyBytes(int n) {
            this.maxKeyBytes = n;
            return this;
        }

        public Builder maxValueBytes(int n) {
            this.maxValueBytes = n;
            return this;
        }

        /** The largest value inside one message; larger ones move in chunks. */
        public Builder maxInlineValueBytes(int n) {
            this.maxInlineValueBytes = n;
            return this;
        }

        public Builder largeValueMemoryBytes(long n) {
            this.largeValueMemoryBytes = n;
            return this;
        }

        public Builder maxRequestBytes(int n) {
            this.maxRequestBytes = n;
            return this;
        }

        public Builder maxOpsPerRequest(int n) {
            this.maxOpsPerRequest = n;
            return this;
        }

        public Builder maxScanPageEntries(int n) {
            this.maxScanPageEntries = n;
            return this;
        }

        public Builder maxScanPageBytes(int n) {
            this.maxScanPageBytes = n;
            return this;
        }

        public Builder blockCacheBytes(long n) {
            this.blockCacheBytes = n;
            return this;
        }

        public Builder writeBufferBytes(long n) {
            this.writeBufferBytes = n;
            return this;
        }

        public Builder storeWriteBufferBytes(long n) {
            this.storeWriteBufferBytes = n;
            return this;
        }

        public Builder backgroundThreads(int n) {
            this.backgroundThreads = n;
            return this;
        }

        public Builder maxOpenFilesPerStore(int n) {
            this.maxOpenFilesPerStore = n;
            return this;
        }

        public Builder storeIdleClose(Duration d) {
            this.storeIdleClose = Objects.requireNonNull(d);
            return this;
        }

        public Builder maxOpenStores(int n) {
            this.maxOpenStores = n;
            return this;
        }

        /** The Bloom filter settings (the {@code filter.*} keys). */
        public Builder filters(FilterOptions options) {
            filterTargetFpp = options.targetFpp();
            filterMaxShardBytes = options.maxShardBytes();
            filterMaxMemoryBytes = options.maxMemoryBytes();
            filterRebuildThreads = options.rebuildThreads();
            filterRebuildBytesPerSecond = options.rebuildBytesPerSecond();
            filterMaxConcurrentFetches = options.maxConcurrentFetches();
            return this;
        }

        public Builder ttlSweepInterval(Duration d) {
            this.ttlSweepInterval = Objects.requireNonNull(d);
            return this;
        }

        public Builder ttlSweepBytesPerSecond(long n) {
            this.ttlSweepBytesPerSecond = n;
            return this;
        }

        /** The node's certificate chain (PEM); with {@link #tlsKeyFile}, the node speaks TLS. */
        public Builder tlsCertFile(@Nullable Path file) {
            this.tlsCertFile = file;
            return this;
        }

        /** The private key of {@link #tlsCertFile} (unencrypted PKCS#8 PEM). */
        public Builder tlsKeyFile(@Nullable Path file) {
            this.tlsKeyFile = file;
            return this;
        }

        /** CA certificate(s) (PEM) that every client's certificate must chain to: mutual TLS. */
        public Builder tlsClientCaFile(@Nullable Path file) {
            this.tlsClientCaFile = file;
            return this;
        }

        /** The credentials file; every call but Health then needs one of its tokens. */
        public Builder authTokenFile(@Nullable Path file) {
            this.authTokenFile = file;
            return this;
        }

        /** How often the token file is checked for changes (zero: never). */
        public Builder authReloadInterval(Duration d) {
            this.authReloadInterval = Objects.requireNonNull(d);
            return this;
        }

        /** All the {@code tls.*} and {@code auth.*} settings at once. */
        public Builder security(SecurityOptions options) {
            tlsCertFile = options.certFile();
            tlsKeyFile = options.keyFile();
            tlsClientCaFile = options.clientCaFile();
            authTokenFile = options.tokenFile();
            authReloadInterval = options.tokenReloadInterval();
            return this;
        }

        private SecurityOptions security() {
            return new SecurityOptions(
                    tlsCertFile, tlsKeyFile, tlsClientCaFile, authTokenFile, authReloadInterval);
        }

        /**
         * The port of the metrics endpoint ({@code /metrics}, {@code /health}, {@code /ready}) on
         * the same host; 0 for an ephemeral one; null (the default) for none.
         */
        public Builder metricsPort(@Nullable Integer port) {
            this.metricsPort = port;
            return this;
        }

        /** How long a walk of the data dir and a sample of RocksDB properties serve scrapes. */
        public Builder metricsSampleInterval(Duration d) {
            this.metricsSampleInterval = Objects.requireNonNull(d);
            return this;
        }

        /** {@code durable.local-snapshots-per-shard} and {@code durable.local-snapshot-max-age}. */
        public Builder snapshotCache(SnapshotCacheOptions options) {
            localSnapshotsPerShard = options.keepPerShard();
            localSnapshotMaxAge = options.maxAge();
            return this;
        }

        /** All the {@code durable.*} settings at once. */
        public Builder durable(DurableOptions options) {
            durableEnabled = options.enabled();
            durableFlinkConfDir = options.flinkConfDir();
            durableFlinkConfig = new TreeMap<>(options.flinkConfig());
            durablePluginsDir = options.pluginsDir();
            durableTransferThreads = options.transferThreads();
            durableMaxAttempts = options.maxAttempts();
            durableRetryBackoff = options.retryBackoff();
            durableTransferTimeout = options.transferTimeout();
            return this;
        }

        private DurableOptions durable() {
            return new DurableOptions(
                    durableEnabled,
                    durableFlinkConfDir,
                    durableFlinkConfig,
                    durablePluginsDir,
                    durableTransferThreads,
                    durableMaxAttempts,
                    durableRetryBackoff,
                    durableTransferTimeout);
        }

        public Builder shutdownGrace(Duration d) {
            this.shutdownGrace = Objects.requireNonNull(d);
            return this;
        }

        /** Keys of the per-shard layout, and what replaced them. */
        private static final Map<String, String> RENAMED_KEYS =
                Map.of(
                        "shards.max-open", "stores.max-open",
                        "shards.idle-close", "stores.idle-close",
                        "rocksdb.shard-write-buffer-bytes", "rocksdb.store-write-buffer-bytes",
                        "rocksdb.max-open-files-per-shard", "rocksdb.max-open-files-per-store");

        /**
         * Applies a config file's keys; a key not declared in {@link KvServerOptions} and a bad
         * value fail with a message naming the key.
         */
        public Builder properties(Properties props) {
            for (String key : new TreeSet<>(props.stringPropertyNames())) {
                if (key.equals("cluster.node-index")) {
                    throw new IllegalArgumentException(
                            "config key 'cluster.node-index' is now 'cluster.node-name': nodes are"
                                    + " named in cluster.nodes (name=host:port,...) and shards"
                                    + " placed by name, not by position");
                }
                String renamed = RENAMED_KEYS.get(key);
                if (renamed != null) {
                    throw new IllegalArgumentException(
                            "config key '"
                                    + key
                                    + "' is now '"
                                    + renamed
                                    + "': shards are key ranges of stores, one RocksDB instance"
                                    + " per writer of a table");
                }
                KvServerOptions.ServerOption option =
                        KvServerOptions.forKey(key)
                                .orElseThrow(
                                        () ->
                                                new IllegalArgumentException(
                                                        "unknown config key '" + key + "'"));
                String v = props.getProperty(key).trim();
                if (option == KvServerOptions.DURABLE_FLINK) {
                    durableFlinkConfig.put(key.substring(option.key().length()), v);
                    continue;
                }
                switch (key) {
                    case "host" -> host(v);
                    case "port" -> port(ConfigValues.integer(key, v));
                    case "data.dir" -> dataDir(Path.of(v));
                    case "cluster.nodes" -> clusterNodes(v);
                    case "cluster.node-name" -> nodeName(v);
                    case "wal.enabled" -> walEnabled(ConfigValues.bool(key, v));
                    case "wal.sync" -> walSync(ConfigValues.bool(key, v));
                    case "limits.max-key-bytes" -> maxKeyBytes(ConfigValues.intBytes(key, v));
                    case "limits.max-value-bytes" -> maxValueBytes(ConfigValues.intBytes(key, v));
                    case "limits.max-inline-value-bytes" ->
                            maxInlineValueBytes(ConfigValues.intBytes(key, v));
                    case "large-values.memory-bytes" ->
                            largeValueMemoryBytes(ConfigValues.bytes(key, v));
                    case "limits.max-request-bytes" ->
                            maxRequestBytes(ConfigValues.intBytes(key, v));
                    case "limits.max-ops-per-request" ->
                            maxOpsPerRequest(ConfigValues.integer(key, v));
                    case "limits.max-scan-page-entries" ->
                            maxScanPageEntries(ConfigValues.integer(key, v));
                    case "limits.max-scan-page-bytes" ->
                            maxScanPageBytes(ConfigValues.intBytes(key, v));
                    case "rocksdb.block-cache-bytes" -> blockCacheBytes(ConfigValues.bytes(key, v));
                    case "rocksdb.write-buffer-bytes" ->
                            writeBufferBytes(ConfigValues.bytes(key, v));
                    case "rocksdb.store-write-buffer-bytes" ->
                            storeWriteBufferBytes(ConfigValues.bytes(key, v));
                    case "rocksdb.background-threads" ->
                            backgroundThreads(ConfigValues.integer(key, v));
                    case "rocksdb.max-open-files-per-store" ->
                            maxOpenFilesPerStore(ConfigValues.integer(key, v));
                    case "stores.idle-close" -> storeIdleClose(ConfigValues.duration(key, v));
                    case "stores.max-open" -> maxOpenStores(ConfigValues.integer(key, v));
                    case "shutdown.grace" -> shutdownGrace(ConfigValues.duration(key, v));
                    case "ttl.sweep-interval" -> ttlSweepInterval(ConfigValues.duration(key, v));
                    case "ttl.sweep-bytes-per-second" ->
                            ttlSweepBytesPerSecond(ConfigValues.bytes(key, v));
                    case "filter.target-fpp" -> filterTargetFpp = ConfigValues.decimal(key, v);
                    case "filter.max-shard-bytes" ->
                            filterMaxShardBytes = ConfigValues.bytes(key, v);
                    case "filter.max-memory-bytes" ->
                            filterMaxMemoryBytes = ConfigValues.bytes(key, v);
                    case "filter.rebuild-threads" ->
                            filterRebuildThreads = ConfigValues.integer(key, v);
                    case "filter.rebuild-bytes-per-second" ->
                            filterRebuildBytesPerSecond = ConfigValues.bytes(key, v);
                    case "filter.max-concurrent-fetches" ->
                            filterMaxConcurrentFetches = ConfigValues.integer(key, v);
                    case "tls.cert-file" -> tlsCertFile(ConfigValues.path(key, v));
                    case "tls.key-file" -> tlsKeyFile(ConfigValues.path(key, v));
                    case "tls.client-ca-file" -> tlsClientCaFile(ConfigValues.path(key, v));
                    case "auth.token-file" -> authTokenFile(ConfigValues.path(key, v));
                    case "auth.reload-interval" ->
                            authReloadInterval(ConfigValues.duration(key, v));
                    case "metrics.port" -> metricsPort(ConfigValues.integer(key, v));
                    case "metrics.sample-interval" ->
                            metricsSampleInterval(ConfigValues.duration(key, v));
                    case "durable.enabled" -> durableEnabled = ConfigValues.bool(key, v);
                    case "durable.flink-conf-dir" ->
                            durableFlinkConfDir = ConfigValues.path(key, v);
                    case "durable.plugins-dir" -> durablePluginsDir = ConfigValues.path(key, v);
                    case "durable.transfer-threads" ->
                            durableTransferThreads = ConfigValues.integer(key, v);
                    case "durable.max-attempts" ->
                            durableMaxAttempts = ConfigValues.integer(key, v);
                    case "durable.retry-backoff" ->
                            durableRetryBackoff = ConfigValues.duration(key, v);
                    case "durable.transfer-timeout" ->
                            durableTransferTimeout = ConfigValues.duration(key, v);
                    case "durable.local-snapshots-per-shard" ->
                            localSnapshotsPerShard = ConfigValues.integer(key, v);
                    case "durable.local-snapshot-max-age" ->
                            localSnapshotMaxAge = ConfigValues.duration(key, v);
                    default ->
                            throw new IllegalStateException(
                                    "config key '"
                                            + key
                                            + "' is declared in KvServerOptions but not applied");
                }
            }
            return this;
        }

        /**
         * @throws IllegalArgumentException naming the first bad setting
         */
        public KvServerConfig build() {
            if (host.isBlank()) {
                throw new IllegalArgumentException("host must not be empty");
            }
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port " + port + " out of range 0..65535");
            }
            if (metricsPort != null && (metricsPort < 0 || metricsPort > 65535)) {
                throw new IllegalArgumentException(
                        "metrics.port " + metricsPort + " out of range 0..65535");
            }
            if (metricsSampleInterval.isNegative()) {
                throw new IllegalArgumentException(
                        "metrics.sample-interval must not be negative, not "
                                + metricsSampleInterval);
            }
            checkCluster();
            if (walSync && !walEnabled) {
                throw new IllegalArgumentException("wal.sync = true needs wal.enabled = true");
            }
            positive("limits.max-key-bytes", maxKeyBytes);
            positive("limits.max-value-bytes", maxValueBytes);
            positive("limits.max-inline-value-bytes", maxInlineValueBytes);
            positive("large-values.memory-bytes", largeValueMemoryBytes);
            if (maxValueBytes > MAX_VALUE_BYTES_LIMIT) {
                throw new IllegalArgumentException(
                        "limits.max-value-bytes must be at most "
                                + MAX_VALUE_BYTES_LIMIT
                                + " (1 GiB), not "
                                + maxValueBytes);
            }

            positive("limits.max-request-bytes", maxRequestBytes);
            positive("limits.max-ops-per-request", maxOpsPerRequest);
            positive("limits.max-scan-page-entries", maxScanPageEntries);
            positive("limits.max-scan-page-bytes", maxScanPageBytes);
            if (maxRequestBytes < MIN_REQUEST_BYTES) {
                throw new IllegalArgumentException(
                        "limits.max-request-bytes must be at least "
                                + MIN_REQUEST_BYTES
                                + " (one request must hold a batch of ops), not "
                                + maxRequestBytes);
            }
            int inline = Math.min(maxInlineValueBytes, maxValueBytes);
            if ((long) maxKeyBytes + inline > maxRequestBytes) {
                throw new IllegalArgumentException(
                        "limits.max-key-bytes ("
                                + maxKeyBytes
                                + ") + limits.max-inline-value-bytes ("
                                + inline
                                + ") must fit in limits.max-request-bytes ("
                                + maxRequestBytes
                                + "): a put of the largest inline entry could never be sent");
            }
            positive("rocksdb.block-cache-bytes", blockCacheBytes);
            positive("rocksdb.write-buffer-bytes", writeBufferBytes);
            positive("rocksdb.store-write-buffer-bytes", storeWriteBufferBytes);
            positive("rocksdb.background-threads", backgroundThreads);
            positive("stores.max-open", maxOpenStores);
            if (maxOpenFilesPerStore == 0 || maxOpenFilesPerStore < -1) {
                throw new IllegalArgumentException(
                        "rocksdb.max-open-files-per-store must be -1 (unlimited) or > 0, not "
                                + maxOpenFilesPerStore);
            }
            if (ttlSweepInterval.isNegative() || ttlSweepInterval.isZero()) {
                throw new IllegalArgumentException(
                        "ttl.sweep-interval must be > 0, not " + ttlSweepInterval);
            }
            if (ttlSweepBytesPerSecond < 0) {
                throw new IllegalArgumentException(
                        "ttl.sweep-bytes-per-second must be >= 0 (0: unlimited), not "
                                + ttlSweepBytesPerSecond);
            }
            if (storeIdleClose.isNegative() || shutdownGrace.isNegative()) {
                throw new IllegalArgumentException("durations must not be negative");
            }
            security().validate();
            durable().validate();
            return new KvServerConfig(this);
        }

        private static void positive(String key, long value) {
            if (value <= 0) {
                throw new IllegalArgumentException(key + " must be > 0, not " + value);
            }
        }

        /** This node is in the list, once, as is every other name and address. */
        private void checkCluster() {
            if (nodeName != null) {
                try {
                    ClusterNode.checkName(nodeName);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("cluster.node-name: " + e.getMessage(), e);
                }
            }
            if (clusterNodes.isEmpty()) {
                return;
            }
            ClusterView view;
            try {
                view = ClusterView.of(clusterNodes);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("cluster.nodes: " + e.getMessage(), e);
            }
            if (nodeName == null) {
                throw new IllegalArgumentException(
                        "cluster.nodes is set but cluster.node-name is not: name this node, one of "
                                + view.nameList());
            }
            if (view.indexOf(nodeName) < 0) {
                throw new IllegalArgumentException(
                        "cluster.node-name '"
                                + nodeName
                                + "' is not in cluster.nodes ("
                                + view.nameList()
                                + ")");
            }
        }
    }
}
