package io.taishan.backend;

import java.time.Duration;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.MemorySize;

/** The configuration of {@link TaishanStateBackend}; every key starts with {@code taishan.}. */
public final class TaishanOptions {
    private TaishanOptions() {}

    /** Where timers (priority-queue state) live. */
    public enum TimerServiceType {
        /** In the KV store, with each key group's head cached in memory. */
        REMOTE,
        /** On the JVM heap, written into checkpoints as raw keyed state. */
        HEAP
    }

    public static final ConfigOption<String> KV_ADDRESS =
            ConfigOptions.key("taishan.kv.address")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "The kv-server node(s) to connect to, as host:port[,host:port...]."
                                    + " Any node of the cluster will do as a seed; the client"
                                    + " learns the others from it.");

    public static final ConfigOption<Duration> KV_REQUEST_TIMEOUT =
            ConfigOptions.key("taishan.kv.request-timeout")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(10))
                    .withDescription(
                            "Deadline of every call to the kv-server. An unreachable server fails"
                                    + " the task after this (times the retries of idempotent"
                                    + " calls) instead of hanging.");

    public static final ConfigOption<Integer> KV_MAX_ATTEMPTS =
            ConfigOptions.key("taishan.kv.max-attempts")
                    .intType()
                    .defaultValue(3)
                    .withDescription(
                            "How often an idempotent call (reads, opening shards, snapshots) is"
                                    + " tried before the task fails. Writes are never retried.");

    public static final ConfigOption<Boolean> KV_TLS_ENABLED =
            ConfigOptions.key("taishan.kv.tls.enabled")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Whether the client speaks TLS to the kv-server (which then needs"
                                    + " tls.cert-file and tls.key-file). The server's certificate"
                                    + " must name the host of each address the client dials, and"
                                    + " chain to taishan.kv.tls.trust-cert-file or, if that is"
                                    + " unset, to a CA of the JVM's default trust store.");

    public static final ConfigOption<String> KV_TLS_TRUST_CERT_FILE =
            ConfigOptions.key("taishan.kv.tls.trust-cert-file")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "PEM file of the CA certificate(s) the client trusts for the"
                                    + " kv-server's certificate, on every TaskManager. Unset: the"
                                    + " JVM's default trust store. Needs taishan.kv.tls.enabled.");

    public static final ConfigOption<String> KV_TLS_CERT_FILE =
            ConfigOptions.key("taishan.kv.tls.cert-file")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "PEM file of the client's certificate (chain, leaf first), for a"
                                    + " kv-server with mutual TLS (tls.client-ca-file), on every"
                                    + " TaskManager. Set together with taishan.kv.tls.key-file;"
                                    + " needs taishan.kv.tls.enabled.");

    public static final ConfigOption<String> KV_TLS_KEY_FILE =
            ConfigOptions.key("taishan.kv.tls.key-file")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "PEM file of the private key of taishan.kv.tls.cert-file"
                                    + " (unencrypted PKCS#8: -----BEGIN PRIVATE KEY-----).");

    /**
     * Hidden in Flink's configuration dumps and logs: Flink masks every key containing "token"
     * ({@code GlobalConfiguration.isSensitive}).
     */
    public static final ConfigOption<String> KV_TOKEN =
            ConfigOptions.key("taishan.kv.token")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "The bearer token sent with every call to a kv-server with"
                                    + " auth.token-file; it must cover the job's tables (their"
                                    + " names start with taishan.table.prefix and '_'). Flink"
                                    + " hides its value in logs and the web UI, but it travels in"
                                    + " the job's configuration: prefer taishan.kv.token-file,"
                                    + " and TLS (without it the token crosses the network in"
                                    + " clear text).");

    public static final ConfigOption<String> KV_TOKEN_FILE =
            ConfigOptions.key("taishan.kv.token-file")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "A file on every TaskManager holding the bearer token (its first line"
                                    + " that is neither blank nor a # comment), read when a"
                                    + " subtask connects, so a rotated token reaches the next"
                                    + " restart. Not together with taishan.kv.token.");

    public static final ConfigOption<MemorySize> WRITE_QUEUE_FLUSH_BYTES =
            ConfigOptions.key("taishan.write-queue.flush-bytes")
                    .memoryType()
                    .defaultValue(MemorySize.parse("1mb"))
                    .withDescription(
                            "A subtask's pending writes are sent as one batch once they reach this"
                                    + " size.");

    public static final ConfigOption<Integer> WRITE_QUEUE_FLUSH_COUNT =
            ConfigOptions.key("taishan.write-queue.flush-count")
                    .intType()
                    .defaultValue(2000)
                    .withDescription(
                            "A subtask's pending writes are sent as one batch once they reach this"
                                    + " many operations.");

    public static final ConfigOption<Duration> WRITE_QUEUE_FLUSH_INTERVAL =
            ConfigOptions.key("taishan.write-queue.flush-interval")
                    .durationType()
                    .defaultValue(Duration.ofMillis(50))
                    .withDescription(
                            "Pending writes older than this are sent even if the size and count"
                                    + " thresholds are not reached.");

    public static final ConfigOption<MemorySize> WRITE_QUEUE_MAX_BYTES =
            ConfigOptions.key("taishan.write-queue.max-bytes")
                    .memoryType()
                    .defaultValue(MemorySize.parse("8mb"))
                    .withDescription(
                            "Upper bound of the memory a subtask's write queue holds (pending and"
                                    + " in-flight writes with their read-your-writes overlay)."
                                    + " When it is full, state access waits for a flush:"
                                    + " back-pressure instead of heap growth. Must be at least"
                                    + " twice taishan.write-queue.flush-bytes.");

    public static final ConfigOption<TimerServiceType> TIMER_SERVICE =
            ConfigOptions.key("taishan.timer-service")
                    .enumType(TimerServiceType.class)
                    .defaultValue(TimerServiceType.REMOTE)
                    .withDescription(
                            "Where timers live: REMOTE keeps them in the KV store, HEAP on the"
                                    + " TaskManager's heap.");

    public static final ConfigOption<Integer> TIMER_CACHE_SIZE =
            ConfigOptions.key("taishan.timer-service.cache-size")
                    .intType()
                    .defaultValue(128)
                    .withDescription(
                            "How many of the earliest timers of each key group are cached in"
                                    + " memory (REMOTE timers only).");

    public static final ConfigOption<Boolean> ASYNC_STATE_BATCHED_READS =
            ConfigOptions.key("taishan.async-state.batched-reads")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Flink 2 only. Operators with asynchronous state (State V2) get"
                                    + " Taishan's asynchronous keyed backend, which reads the"
                                    + " cache misses of a whole batch of requests with one"
                                    + " MultiGet per kv-server node. Off: Flink's adaptor for"
                                    + " synchronous backends serves them, one request at a"
                                    + " time. Either way the state and its checkpoints are the"
                                    + " same.");

    public static final ConfigOption<String> CACHE_TYPE =
            ConfigOptions.key("taishan.cache.type")
                    .stringType()
                    .defaultValue("off-heap")
                    .withDescription(
                            "The TaskManager-wide read cache of state values: off-heap (OHC,"
                                    + " outside the Java heap), on-heap (Caffeine, for small"
                                    + " deployments) or none. One cache per TaskManager and type,"
                                    + " shared by every subtask of every job on it.");

    public static final ConfigOption<MemorySize> CACHE_SIZE =
            ConfigOptions.key("taishan.cache.size")
                    .memoryType()
                    .noDefaultValue()
                    .withDescription(
                            "Memory each keyed operator subtask contributes to the shared read"
                                    + " cache. Unset (the default): the subtask's share of Flink's"
                                    + " managed memory (the STATE_BACKEND use case, as the RocksDB"
                                    + " backend takes it), so Flink budgets it and a container is"
                                    + " never killed for it. Set: this much, outside Flink's"
                                    + " memory model; add it to taskmanager.memory.task.off-heap.size"
                                    + " (off-heap) or the task heap (on-heap) yourself.");

    public static final ConfigOption<String> CACHE_LOCAL_DIR =
            ConfigOptions.key("taishan.cache.local-dir")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "A directory on the TaskManager's local disk (an SSD) for a second"
                                    + " tier of the read cache, behind the memory cache: for state"
                                    + " far larger than memory. Unset (the default): no disk is"
                                    + " used. The tier is a cache only: it never holds a write the"
                                    + " store lacks, works in a subdirectory of its own that it"
                                    + " deletes when the TaskManager's last Taishan subtask ends,"
                                    + " and is lost without harm with the TaskManager or its disk."
                                    + " Needs taishan.cache.type off-heap or on-heap. It keeps up"
                                    + " to 96 MiB of recent writes on the heap before they reach"
                                    + " the disk.");

    public static final ConfigOption<MemorySize> CACHE_LOCAL_SIZE =
            ConfigOptions.key("taishan.cache.local-size")
                    .memoryType()
                    .defaultValue(MemorySize.parse("2g"))
                    .withDescription(
                            "The disk the local cache tier (taishan.cache.local-dir) may use on"
                                    + " each TaskManager; the entries read least recently leave"
                                    + " first. At least 4 MiB. Up to 2 GiB the tier keeps at most"
                                    + " 64 segment files; a larger one keeps proportionally more,"
                                    + " each with 1 MiB of heap for its page cache, and a read"
                                    + " that misses probes each one's Bloom filter.");

    public static final ConfigOption<Boolean> BLOOM_FILTER_ENABLED =
            ConfigOptions.key("taishan.bloom-filter.enabled")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Whether reads consult a Bloom filter of each owned shard, which"
                                    + " answers \"surely absent\" without a round trip. A shard"
                                    + " restored from a snapshot answers \"maybe\" until its"
                                    + " filter is loaded.");

    public static final ConfigOption<Duration> TTL_CLOCK_REPORT_INTERVAL =
            ConfigOptions.key("taishan.ttl.clock-report-interval")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(5))
                    .withDescription(
                            "How often a subtask with TTL'd state reports its TTL clock to the"
                                    + " kv-server, which deletes expired entries by that clock"
                                    + " (never its own): idle state leaves the store at most this"
                                    + " plus the server's ttl.sweep-interval after it expired.");

    public static final ConfigOption<Boolean> CHECKPOINT_DURABLE =
            ConfigOptions.key("taishan.checkpoint.durable")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Whether checkpoints and native savepoints outlive the kv-server"
                                    + " nodes. On: once the shards' snapshots are taken, each node"
                                    + " copies their new files into the job's checkpoint storage"
                                    + " (data files under shared/, reusing the copies of the last"
                                    + " confirmed checkpoint; a native savepoint copies everything"
                                    + " into its own directory), and the checkpoint is Flink's"
                                    + " incremental handle on those copies, whose files the"
                                    + " JobManager deletes once no retained checkpoint needs them."
                                    + " A restore on a node that lost its snapshots downloads them;"
                                    + " one that holds them downloads nothing. Needs a file-system"
                                    + " checkpoint storage (with the JobManager's storage,"
                                    + " checkpoints stay on the nodes only) and durable.enabled"
                                    + " (the default) on every kv-server node. Off: checkpoints"
                                    + " live on the kv-server nodes only, and die with a node's"
                                    + " disk.");

    public static final ConfigOption<String> TABLE_PREFIX =
            ConfigOptions.key("taishan.table.prefix")
                    .stringType()
                    .defaultValue("flink")
                    .withDescription(
                            "Each keyed operator of a job gets one table, named"
                                    + " <prefix>_<job id>_<operator id>. The operator id is the"
                                    + " stable OperatorID inside Flink's operator identifier, never"
                                    + " the subtask suffix, so every subtask and every rescale of"
                                    + " the operator uses the same table. Letters, digits, '_',"
                                    + " '.' and '-' only.");
}
