package io.taishan.kv.server;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.annotation.Nullable;

/**
 * Every key of a kv-server config file, with its type, default and meaning: the one place they are
 * written down. {@link KvServerConfig.Builder#properties} accepts only the keys declared here, and
 * {@code docs/config/kv-server-options.md} is generated from them (module {@code
 * config-reference}), so a key cannot be added without its description.
 *
 * <p>A new key: declare it here as a {@code public static final ServerOption}, then apply it in
 * {@link KvServerConfig.Builder#properties}. {@code KvServerOptionsTest} holds every documented
 * default to the builder's real one.
 */
public final class KvServerOptions {
    private KvServerOptions() {}

    /** How a value is written in the config file. */
    public enum ValueType {
        STRING("string", "text", "example"),
        INTEGER("integer", "a decimal integer", "1"),
        BOOLEAN("boolean", "`true` or `false`", "true"),
        DECIMAL("decimal", "a decimal number (`0.01`)", "0.5"),
        SIZE("size", "bytes, or with `k`, `m`, `g` (`65536`, `64k`, `256m`, `1g`)", "1m"),
        DURATION(
                "duration",
                "`ms`, `s`, `m`, `h` (`500ms`, `30s`, `5m`, `1h`); a plain number is milliseconds",
                "1s"),
        PATH(
                "path",
                "a file or directory path, absolute or relative to the working directory",
                "/etc/taishan/example"),
        NODE_LIST(
                "nodes",
                "`name=host:port[,name=host:port...]`, names of `A-Z a-z 0-9 _ . -`",
                "kv1=10.0.0.1:7600,kv2=10.0.0.2:7600");

        private final String typeName;
        private final String syntax;
        private final String example;

        ValueType(String typeName, String syntax, String example) {
            this.typeName = typeName;
            this.syntax = syntax;
            this.example = example;
        }

        /** The short name in the reference's type column. */
        public String typeName() {
            return typeName;
        }

        /** How values of this type are written (Markdown). */
        public String syntax() {
            return syntax;
        }

        /** A value the config file accepts for this type. */
        public String example() {
            return example;
        }
    }

    /**
     * One config file key.
     *
     * @param defaultValue as it would be written in the file; null when unset by default (what that
     *     means is in the description)
     * @param commandLineFlag the {@code taishan-kv-server} flag that sets it too (and wins over the
     *     file), or null
     */
    public record ServerOption(
            String key,
            ValueType type,
            @Nullable String defaultValue,
            @Nullable String commandLineFlag,
            String description) {

        public Optional<String> defaultIfSet() {
            return Optional.ofNullable(defaultValue);
        }

        public Optional<String> flag() {
            return Optional.ofNullable(commandLineFlag);
        }

        /**
         * Whether this declares a family of keys, every key that starts with {@link #key()} (which
         * then ends with a dot), as {@code durable.flink.} passes Flink's own keys through.
         */
        public boolean isPrefix() {
            return key.endsWith(".");
        }

        /** The key as the reference shows it: {@code durable.flink.<flink key>} for a prefix. */
        public String documentedKey() {
            return isPrefix() ? key + "<flink key>" : key;
        }
    }

    private static ServerOption option(
            String key, ValueType type, @Nullable String defaultValue, String description) {
        return new ServerOption(key, type, defaultValue, null, description);
    }

    private static ServerOption option(
            String key,
            ValueType type,
            @Nullable String defaultValue,
            String flag,
            String description) {
        return new ServerOption(key, type, defaultValue, flag, description);
    }

    // ---- network and cluster

    public static final ServerOption HOST =
            option(
                    "host",
                    ValueType.STRING,
                    "127.0.0.1",
                    "--host",
                    "The address to bind. Use the node's own address (or 0.0.0.0) to serve other"
                            + " machines.");

    public static final ServerOption PORT =
            option(
                    "port",
                    ValueType.INTEGER,
                    null,
                    "--port",
                    "The port to listen on (0: an ephemeral port, printed in the LISTENING line)."
                            + " Required, here or as the flag.");

    public static final ServerOption DATA_DIR =
            option(
                    "data.dir",
                    ValueType.PATH,
                    null,
                    "--data-dir",
                    "The data directory: the live shards, their snapshots, the catalog and the"
                            + " epoch and lease files. One server per directory (a LOCK file)."
                            + " Required, here or as the flag.");

    public static final ServerOption CLUSTER_NODES =
            option(
                    "cluster.nodes",
                    ValueType.NODE_LIST,
                    null,
                    "Every node of the cluster by name and address. Shards are placed by name"
                            + " (rendezvous hashing: adding or removing a node moves about 1/N of"
                            + " the shards), so the order means nothing, but every node must list"
                            + " the same nodes; a node refuses the shards it does not own under its"
                            + " own list. Clients learn the list from any node. An entry without a"
                            + " name (the positional list of earlier versions) is refused. Changing"
                            + " it: docs/operations.md, Changing the cluster. Unset: a single"
                            + " node.");

    public static final ServerOption CLUSTER_NODE_NAME =
            option(
                    "cluster.node-name",
                    ValueType.STRING,
                    null,
                    "This node's name in cluster.nodes; required with it. Without cluster.nodes,"
                            + " the name of the single node (unset: kv1). Replaces"
                            + " cluster.node-index, which is refused.");

    // ---- durability

    public static final ServerOption WAL_ENABLED =
            option(
                    "wal.enabled",
                    ValueType.BOOLEAN,
                    "false",
                    "RocksDB's write-ahead log. Off by default because recovery always goes back to"
                            + " a durable snapshot: after an unclean stop every lease is fenced and"
                            + " jobs restore their last checkpoint. On: a process crash loses"
                            + " nothing and leases are kept (see kv-server/README.md, Crashes).");

    public static final ServerOption WAL_SYNC =
            option(
                    "wal.sync",
                    ValueType.BOOLEAN,
                    "false",
                    "fsync the WAL before a write is acknowledged (needs wal.enabled): a machine"
                            + " crash or power loss loses nothing either. Costs one fsync per"
                            + " shard per write request.");

    // ---- request limits

    public static final ServerOption LIMITS_MAX_KEY_BYTES =
            option(
                    "limits.max-key-bytes",
                    ValueType.SIZE,
                    "64k",
                    "The largest key (also of scan bounds).");

    public static final ServerOption LIMITS_MAX_VALUE_BYTES =
            option(
                    "limits.max-value-bytes",
                    ValueType.SIZE,
                    "512m",
                    "The largest value: put, append operand, and any value read (a list grown"
                            + " past it by appends is kept, but reading it fails with"
                            + " LIMIT_EXCEEDED naming this limit). At most 1g.");

    public static final ServerOption LIMITS_MAX_INLINE_VALUE_BYTES =
            option(
                    "limits.max-inline-value-bytes",
                    ValueType.SIZE,
                    "1m",
                    "The largest value inside a Get, MultiGet, Scan or Write message; larger ones"
                            + " move in chunks (ReadValue, UploadValue; kv-server README, Large"
                            + " values). Lowered to limits.max-value-bytes if that is smaller.");

    public static final ServerOption LIMITS_MAX_REQUEST_BYTES =
            option(
                    "limits.max-request-bytes",
                    ValueType.SIZE,
                    "32m",
                    "The serialized size of one Write or MultiGet request (at least 64k, and at"
                            + " least the largest key plus the largest inline value); also bounds"
                            + " the inline values of one MultiGet answer. gRPC's inbound message"
                            + " limit is set to twice this plus 1 MiB, so an oversized request"
                            + " gets LIMIT_EXCEEDED naming the limit.");

    public static final ServerOption LARGE_VALUES_MEMORY_BYTES =
            option(
                    "large-values.memory-bytes",
                    ValueType.SIZE,
                    "768m",
                    "Heap that values moving in chunks may hold at once (uploads staged for"
                            + " their Write included); lowered at start to half of -Xmx. One value"
                            + " larger than it still moves, alone; transfers that do not fit wait"
                            + " on threads of their own, never on the network threads.");

    public static final ServerOption LIMITS_MAX_OPS_PER_REQUEST =
            option(
                    "limits.max-ops-per-request",
                    ValueType.INTEGER,
                    "100000",
                    "The operations of one Write, the keys of one MultiGet.");

    public static final ServerOption LIMITS_MAX_SCAN_PAGE_ENTRIES =
            option(
                    "limits.max-scan-page-entries",
                    ValueType.INTEGER,
                    "10000",
                    "Entries per Scan page (a smaller limit in the request wins).");

    public static final ServerOption LIMITS_MAX_SCAN_PAGE_BYTES =
            option(
                    "limits.max-scan-page-bytes",
                    ValueType.SIZE,
                    "1m",
                    "Bytes per Scan page (at least one entry is always returned).");

    // ---- RocksDB

    public static final ServerOption ROCKSDB_BLOCK_CACHE_BYTES =
            option(
                    "rocksdb.block-cache-bytes",
                    ValueType.SIZE,
                    "256m",
                    "The one LRU block cache of all shards of the node (it also holds index and"
                            + " filter blocks, and the write buffers are charged to it). Off-heap:"
                            + " not part of the JVM's -Xmx.");

    public static final ServerOption ROCKSDB_WRITE_BUFFER_BYTES =
            option(
                    "rocksdb.write-buffer-bytes",
                    ValueType.SIZE,
                    "128m",
                    "The memtable memory of all stores together (one WriteBufferManager, charged"
                            + " to the block cache).");

    public static final ServerOption ROCKSDB_STORE_WRITE_BUFFER_BYTES =
            option(
                    "rocksdb.store-write-buffer-bytes",
                    ValueType.SIZE,
                    "32m",
                    "One store's memtable size (up to 4 per store, within"
                            + " rocksdb.write-buffer-bytes). A store is one RocksDB instance holding"
                            + " the key ranges of one writer's shards of a table (a Flink subtask's"
                            + " key groups). A memtable's arena grows in 64 KiB blocks, so a store"
                            + " with few writes holds little of it.");

    public static final ServerOption ROCKSDB_BACKGROUND_THREADS =
            option(
                    "rocksdb.background-threads",
                    ValueType.INTEGER,
                    "2",
                    "Flush and compaction threads shared by all stores of the node.");

    public static final ServerOption ROCKSDB_MAX_OPEN_FILES_PER_STORE =
            option(
                    "rocksdb.max-open-files-per-store",
                    ValueType.INTEGER,
                    "64",
                    "RocksDB's max_open_files of one store: the SST files its table cache holds"
                            + " open (-1: unlimited). An open store holds about 6 file descriptors"
                            + " with one SST open, plus one per further open SST, up to this.");

    // ---- stores

    public static final ServerOption STORES_IDLE_CLOSE =
            option(
                    "stores.idle-close",
                    ValueType.DURATION,
                    "5m",
                    "An open store unused this long is flushed and closed (it reopens on the next"
                            + " call, in a few ms).");

    public static final ServerOption STORES_MAX_OPEN =
            option(
                    "stores.max-open",
                    ValueType.INTEGER,
                    "1024",
                    "Above this many open stores the least recently used are flushed and closed."
                            + " Lowered at start to what the file descriptor limit allows (about"
                            + " (ulimit -n − 512) / (rocksdb.max-open-files-per-store + 8)), with a"
                            + " warning. The stores on disk are not limited; a store holds the"
                            + " shards of one writer of one table, however many.");

    public static final ServerOption SHUTDOWN_GRACE =
            option(
                    "shutdown.grace",
                    ValueType.DURATION,
                    "10s",
                    "On SIGTERM, how long running calls may finish before every shard is flushed"
                            + " and closed.");

    // ---- state TTL

    public static final ServerOption TTL_SWEEP_INTERVAL =
            option(
                    "ttl.sweep-interval",
                    ValueType.DURATION,
                    "1m",
                    "How often expired entries of TTL'd states are swept out of the live shards,"
                            + " by the TTL clock their job reports (never the server's clock).");

    public static final ServerOption TTL_SWEEP_BYTES_PER_SECOND =
            option(
                    "ttl.sweep-bytes-per-second",
                    ValueType.SIZE,
                    "32m",
                    "What all expiry sweeps of the node may read per second together (0: no"
                            + " limit).");

    // ---- Bloom filters

    public static final ServerOption FILTER_TARGET_FPP =
            option(
                    "filter.target-fpp",
                    ValueType.DECIMAL,
                    "0.01",
                    "A shard filter's false-positive rate at capacity (capacity = 2 × the live"
                            + " keys when it was built): about 1.25 bytes per key of capacity at"
                            + " 1%.");

    public static final ServerOption FILTER_MAX_SHARD_BYTES =
            option(
                    "filter.max-shard-bytes",
                    ValueType.SIZE,
                    "64m",
                    "One shard filter's size cap (about 50 million keys at 1%); past it the"
                            + " false-positive rate rises, never a false negative.");

    public static final ServerOption FILTER_MAX_MEMORY_BYTES =
            option(
                    "filter.max-memory-bytes",
                    ValueType.SIZE,
                    "512m",
                    "All live and rebuilding filters of the node (direct memory). Lowered at start"
                            + " to half the JVM's direct memory limit (-XX:MaxDirectMemorySize, by"
                            + " default the heap size). A filter that does not fit is not served"
                            + " (reads then go to the server).");

    public static final ServerOption FILTER_REBUILD_THREADS =
            option(
                    "filter.rebuild-threads",
                    ValueType.INTEGER,
                    "1",
                    "Filter rebuild scans at once (1..8).");

    public static final ServerOption FILTER_REBUILD_BYTES_PER_SECOND =
            option(
                    "filter.rebuild-bytes-per-second",
                    ValueType.SIZE,
                    "64m",
                    "Keys and values all rebuild scans may read per second together (0: no"
                            + " limit).");

    public static final ServerOption FILTER_MAX_CONCURRENT_FETCHES =
            option(
                    "filter.max-concurrent-fetches",
                    ValueType.INTEGER,
                    "8",
                    "Filter copies being streamed to clients at once; further fetches wait their"
                            + " turn.");

    // ---- security

    public static final ServerOption TLS_CERT_FILE =
            option(
                    "tls.cert-file",
                    ValueType.PATH,
                    null,
                    "--tls-cert-file",
                    "The node's certificate chain, PEM, leaf first; with tls.key-file the node"
                            + " speaks only TLS. Its subject alternative names must hold every"
                            + " name clients dial (see kv-server/README.md, Security).");

    public static final ServerOption TLS_KEY_FILE =
            option(
                    "tls.key-file",
                    ValueType.PATH,
                    null,
                    "--tls-key-file",
                    "The private key of tls.cert-file, unencrypted PKCS#8 PEM (-----BEGIN PRIVATE"
                            + " KEY-----).");

    public static final ServerOption TLS_CLIENT_CA_FILE =
            option(
                    "tls.client-ca-file",
                    ValueType.PATH,
                    null,
                    "--tls-client-ca-file",
                    "CA certificate(s), PEM: every client must present a certificate signed by one"
                            + " (mutual TLS).");

    public static final ServerOption AUTH_TOKEN_FILE =
            option(
                    "auth.token-file",
                    ValueType.PATH,
                    null,
                    "--auth-token-file",
                    "The credentials, one '<token> <scope> [name]"
                            + " [checkpoints=<dir>[,<dir>...]]' a line (see kv-server/README.md,"
                            + " Security); every call but Health then needs a bearer token from"
                            + " it.");

    public static final ServerOption AUTH_RELOAD_INTERVAL =
            option(
                    "auth.reload-interval",
                    ValueType.DURATION,
                    "10s",
                    "How often the token file is checked for changes (0: read once at start).");

    // ---- metrics

    public static final ServerOption METRICS_PORT =
            option(
                    "metrics.port",
                    ValueType.INTEGER,
                    null,
                    "--metrics-port",
                    "HTTP port of /metrics (Prometheus text), /health and /ready, bound on host (0:"
                            + " ephemeral, the bound port is logged and printed as METRICS"
                            + " http://host:port/metrics). Off when unset: the endpoint is plain"
                            + " HTTP without TLS or tokens.");

    public static final ServerOption METRICS_SAMPLE_INTERVAL =
            option(
                    "metrics.sample-interval",
                    ValueType.DURATION,
                    "15s",
                    "How long one walk of the data dir and one sample of the open shards' RocksDB"
                            + " properties serve scrapes (they run at most this often).");

    // ---- durable checkpoints: cuts in Flink's checkpoint storage

    public static final ServerOption DURABLE_ENABLED =
            option(
                    "durable.enabled",
                    ValueType.BOOLEAN,
                    "true",
                    "Move cuts to and from Flink's checkpoint storage (s3://, hdfs://, file://;"
                            + " kv-server/README.md, Durable checkpoints) when a job's durable"
                            + " checkpoint asks. Off: such checkpoints fail with a clear cause, no"
                            + " other durable.* key is used, and Flink's file systems are never"
                            + " set up.");

    public static final ServerOption DURABLE_FLINK_CONF_DIR =
            option(
                    "durable.flink-conf-dir",
                    ValueType.PATH,
                    null,
                    "A Flink configuration directory (config.yaml, or flink-conf.yaml), read as"
                            + " Flink reads it, for the file systems' keys (s3.*, fs.*, presto.s3.*,"
                            + " fs.s3a.*, s3.entropy.key): the Flink cluster's own conf/, so the node"
                            + " reaches the checkpoint storage as the JobManager does.");

    public static final ServerOption DURABLE_FLINK =
            option(
                    "durable.flink.",
                    ValueType.STRING,
                    null,
                    "One Flink key for the file systems, set on top of durable.flink-conf-dir:"
                            + " durable.flink.s3.endpoint = http://10.0.0.5:9000 is Flink's"
                            + " s3.endpoint. Values are never logged (credentials).");

    public static final ServerOption DURABLE_PLUGINS_DIR =
            option(
                    "durable.plugins-dir",
                    ValueType.PATH,
                    null,
                    "Flink's plugins directory, one subdirectory per plugin"
                            + " (s3-fs-presto/flink-s3-fs-presto-1.20.0.jar), each loaded in a class"
                            + " loader of its own as Flink loads them: how s3:// is reached. Unset:"
                            + " only the file systems on the server's classpath (file://).");

    public static final ServerOption DURABLE_TRANSFER_THREADS =
            option(
                    "durable.transfer-threads",
                    ValueType.INTEGER,
                    "4",
                    "Files moving to or from checkpoint storage at once on the node, over all"
                            + " uploads and downloads together (1..64).");

    public static final ServerOption DURABLE_MAX_ATTEMPTS =
            option(
                    "durable.max-attempts",
                    ValueType.INTEGER,
                    "3",
                    "Tries of one file before its upload or download fails. A missing or corrupt"
                            + " file to download and a local disk error are never tried again.");

    public static final ServerOption DURABLE_RETRY_BACKOFF =
            option(
                    "durable.retry-backoff",
                    ValueType.DURATION,
                    "1s",
                    "The wait after a file's first failed attempt, doubled after each further"
                            + " one.");

    public static final ServerOption DURABLE_TRANSFER_TIMEOUT =
            option(
                    "durable.transfer-timeout",
                    ValueType.DURATION,
                    "10m",
                    "How long one upload or download of a cut may take; past it the call fails, an"
                            + " upload deleting what it wrote.");

    public static final ServerOption DURABLE_LOCAL_SNAPSHOTS_PER_SHARD =
            option(
                    "durable.local-snapshots-per-shard",
                    ValueType.INTEGER,
                    "2",
                    "Of each shard's snapshots that are in checkpoint storage, the newest this many"
                            + " keep their local copy (a restore on this node from them is"
                            + " metadata-only; from an older one it downloads). Older local copies go"
                            + " as soon as a newer snapshot is uploaded, and so do snapshots that"
                            + " never were and are older than one that was (aborted checkpoints)."
                            + " Snapshots of tables without durable checkpoints are never touched.");

    public static final ServerOption DURABLE_LOCAL_SNAPSHOT_MAX_AGE =
            option(
                    "durable.local-snapshot-max-age",
                    ValueType.DURATION,
                    "2h",
                    "A local copy of a snapshot in checkpoint storage older than this goes whatever"
                            + " its rank: a stopped or cancelled job's table keeps no snapshot files"
                            + " on the node (its checkpoints restore by download). Keep it above the"
                            + " jobs' checkpoint interval, or their failovers download too.");

    private static final Map<String, ServerOption> BY_KEY = byKey();

    /** Every option, in declaration order. */
    public static List<ServerOption> all() {
        return List.copyOf(BY_KEY.values());
    }

    /** The option of a config file key (also a key under a prefix option), if there is one. */
    public static Optional<ServerOption> forKey(String key) {
        ServerOption option = BY_KEY.get(key);
        if (option == null) {
            for (ServerOption candidate : BY_KEY.values()) {
                if (candidate.isPrefix()
                        && key.startsWith(candidate.key())
                        && key.length() > candidate.key().length()) {
                    return Optional.of(candidate);
                }
            }
        }
        return Optional.ofNullable(option).filter(o -> !o.isPrefix());
    }

    /** By reflection, so that declaring an option is all it takes. */
    private static Map<String, ServerOption> byKey() {
        Map<String, ServerOption> options = new LinkedHashMap<>();
        for (Field field : KvServerOptions.class.getDeclaredFields()) {
            int modifiers = field.getModifiers();
            if (field.getType() != ServerOption.class || !Modifier.isStatic(modifiers)) {
                continue;
            }
            if (!Modifier.isPublic(modifiers) || !Modifier.isFinal(modifiers)) {
                throw new IllegalStateException(
                        "KvServerOptions." + field.getName() + " must be public static final");
            }
            ServerOption option;
            try {
                option = (ServerOption) field.get(null);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
            if (options.put(option.key(), option) != null) {
                throw new IllegalStateException("config key declared twice: " + option.key());
            }
        }
        return Collections.unmodifiableMap(options);
    }
}
