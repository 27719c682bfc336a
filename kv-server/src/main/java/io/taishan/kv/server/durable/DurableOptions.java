package io.taishan.kv.server.durable;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import javax.annotation.Nullable;

/**
 * How a node reaches Flink's checkpoint storage (the {@code durable.*} keys of the kv-server's
 * config, declared in {@code io.taishan.kv.server.KvServerOptions}).
 *
 * @param enabled whether the node moves cuts to and from checkpoint storage at all; off, nothing of
 *     this package is started and Flink's file systems are never initialized
 * @param flinkConfDir a Flink configuration directory ({@code config.yaml}, or the legacy {@code
 *     flink-conf.yaml}), read as Flink reads it: the cluster's own, so the node reaches the storage
 *     with the same keys and credentials as the JobManager
 * @param flinkConfig Flink keys set on top of that ({@code durable.flink.s3.endpoint} is Flink's
 *     {@code s3.endpoint})
 * @param pluginsDir Flink's plugins directory (one subdirectory per plugin, e.g. {@code
 *     plugins/s3-fs-presto/flink-s3-fs-presto-1.20.0.jar}), each loaded in a class loader of its
 *     own as Flink does; null: only the file systems on the server's classpath ({@code file://})
 * @param transferThreads files moving at once on the node, over all calls
 * @param maxAttempts tries of one file before its call fails (1: no retry)
 * @param retryBackoff the wait after a file's first failed attempt, doubled after each further one
 * @param transferTimeout how long one upload or download call may take
 */
public record DurableOptions(
        boolean enabled,
        @Nullable Path flinkConfDir,
        Map<String, String> flinkConfig,
        @Nullable Path pluginsDir,
        int transferThreads,
        int maxAttempts,
        Duration retryBackoff,
        Duration transferTimeout) {

    public static final int DEFAULT_TRANSFER_THREADS = 4;
    public static final int DEFAULT_MAX_ATTEMPTS = 3;
    public static final Duration DEFAULT_RETRY_BACKOFF = Duration.ofSeconds(1);
    public static final Duration DEFAULT_TRANSFER_TIMEOUT = Duration.ofMinutes(10);

    public DurableOptions {
        flinkConfig = Map.copyOf(flinkConfig);
        Objects.requireNonNull(retryBackoff, "retryBackoff");
        Objects.requireNonNull(transferTimeout, "transferTimeout");
    }

    /** Off, with every default. */
    public static DurableOptions disabled() {
        return new DurableOptions(
                false,
                null,
                Map.of(),
                null,
                DEFAULT_TRANSFER_THREADS,
                DEFAULT_MAX_ATTEMPTS,
                DEFAULT_RETRY_BACKOFF,
                DEFAULT_TRANSFER_TIMEOUT);
    }

    /**
     * @throws IllegalArgumentException naming the key of the first bad setting
     */
    public DurableOptions validate() {
        if (transferThreads < 1 || transferThreads > 64) {
            throw new IllegalArgumentException(
                    "durable.transfer-threads must be 1..64, not " + transferThreads);
        }
        if (maxAttempts < 1) {
            throw new IllegalArgumentException(
                    "durable.max-attempts must be >= 1, not " + maxAttempts);
        }
        if (retryBackoff.isNegative()) {
            throw new IllegalArgumentException(
                    "durable.retry-backoff must not be negative, not " + retryBackoff);
        }
        if (transferTimeout.isNegative() || transferTimeout.isZero()) {
            throw new IllegalArgumentException(
                    "durable.transfer-timeout must be > 0, not " + transferTimeout);
        }
        for (String key : flinkConfig.keySet()) {
            if (key.isBlank()) {
                throw new IllegalArgumentException("durable.flink. needs a Flink key after it");
            }
        }
        return this;
    }

    /** Without the values of the Flink keys, which may be credentials. */
    @Override
    public String toString() {
        if (!enabled) {
            return "DurableOptions{off}";
        }
        return "DurableOptions{flinkConfDir="
                + flinkConfDir
                + ", flinkKeys="
                + new TreeMap<>(flinkConfig).keySet()
                + ", pluginsDir="
                + pluginsDir
                + ", transferThreads="
                + transferThreads
                + ", maxAttempts="
                + maxAttempts
                + ", retryBackoff="
                + retryBackoff
                + ", transferTimeout="
                + transferTimeout
                + '}';
    }
}
