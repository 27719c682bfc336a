package io.taishan.backend;

import io.taishan.backend.flink.TaishanStateBackendBase;
import io.taishan.backend.read.ReadPathConfig;
import io.taishan.backend.write.WriteQueueConfig;
import io.taishan.cache.LocalDiskCache;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvClientTls;
import io.taishan.kv.protocol.BearerTokens;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.IllegalConfigurationException;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.BackendBuildingException;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.DefaultOperatorStateBackendBuilder;
import org.apache.flink.runtime.state.OperatorStateBackend;

/**
 * Flink keyed state in the Taishan KV service: every keyed operator's state lives in a remote table
 * whose shards are its key groups; checkpoints are remote shard snapshots referenced from a small
 * manifest, so restore and rescale move no state.
 *
 * <p>Turn it on with {@code state.backend.type: io.taishan.backend.TaishanStateBackendFactory} and
 * {@code taishan.kv.address: host:port}, or {@code env.setStateBackend(new
 * TaishanStateBackend().setKvAddress("host:port"))}. Settings made on the object win over the
 * cluster configuration. Creating and configuring it opens no connection (Flink does both on the
 * JobManager too); each subtask connects when its keyed backend is created.
 *
 * <p>Operator state stays in Flink's checkpoint streams, as with every built-in backend.
 *
 * <p>A secured kv-server is reached with {@code taishan.kv.tls.*} and {@code taishan.kv.token} or
 * {@code taishan.kv.token-file} (see {@link TaishanOptions}); {@link #toString()} hides the token,
 * as Flink's configuration does.
 */
public class TaishanStateBackend extends TaishanStateBackendBase
        implements ConfigurableStateBackend {
    private static final long serialVersionUID = 1L;

    private static final List<ConfigOption<?>> OPTIONS =
            List.of(
                    TaishanOptions.KV_ADDRESS,
                    TaishanOptions.KV_REQUEST_TIMEOUT,
                    TaishanOptions.KV_MAX_ATTEMPTS,
                    TaishanOptions.KV_TLS_ENABLED,
                    TaishanOptions.KV_TLS_TRUST_CERT_FILE,
                    TaishanOptions.KV_TLS_CERT_FILE,
                    TaishanOptions.KV_TLS_KEY_FILE,
                    TaishanOptions.KV_TOKEN,
                    TaishanOptions.KV_TOKEN_FILE,
                    TaishanOptions.WRITE_QUEUE_FLUSH_BYTES,
                    TaishanOptions.WRITE_QUEUE_FLUSH_COUNT,
                    TaishanOptions.WRITE_QUEUE_FLUSH_INTERVAL,
                    TaishanOptions.WRITE_QUEUE_MAX_BYTES,
                    TaishanOptions.TIMER_SERVICE,
                    TaishanOptions.TIMER_CACHE_SIZE,
                    TaishanOptions.CACHE_TYPE,
                    TaishanOptions.CACHE_SIZE,
                    TaishanOptions.CACHE_LOCAL_DIR,
                    TaishanOptions.CACHE_LOCAL_SIZE,
                    TaishanOptions.BLOOM_FILTER_ENABLED,
                    TaishanOptions.TTL_CLOCK_REPORT_INTERVAL,
                    TaishanOptions.CHECKPOINT_DURABLE,
                    TaishanOptions.ASYNC_STATE_BATCHED_READS,
                    TaishanOptions.TABLE_PREFIX);

    /** Every option set on this object or read from the configuration it was configured with. */
    private final Configuration settings;

    public TaishanStateBackend() {
        this.settings = new Configuration();
    }

    private TaishanStateBackend(TaishanStateBackend original, ReadableConfig config) {
        super(original, config);
        this.settings = new Configuration();
        for (ConfigOption<?> option : OPTIONS) {
            copy(option, config, settings);
        }
        this.settings.addAll(original.settings);
        validate(settings);
    }

    private static <T> void copy(ConfigOption<T> option, ReadableConfig from, Configuration to) {
        from.getOptional(option).ifPresent(value -> to.set(option, value));
    }

    @Override
    public TaishanStateBackend configure(ReadableConfig config, ClassLoader classLoader)
            throws IllegalConfigurationException {
        return new TaishanStateBackend(this, config);
    }

    // ---- fluent settings

    /** {@code host:port[,host:port...]} of the kv-server cluster. */
    public TaishanStateBackend setKvAddress(String addresses) {
        settings.set(TaishanOptions.KV_ADDRESS, addresses);
        validate(settings);
        return this;
    }

    public TaishanStateBackend setRequestTimeout(Duration timeout) {
        settings.set(TaishanOptions.KV_REQUEST_TIMEOUT, timeout);
        return this;
    }

    public TaishanStateBackend setMaxAttempts(int attempts) {
        settings.set(TaishanOptions.KV_MAX_ATTEMPTS, attempts);
        return this;
    }

    public TaishanStateBackend setWriteQueueFlushBytes(MemorySize bytes) {
        settings.set(TaishanOptions.WRITE_QUEUE_FLUSH_BYTES, bytes);
        return this;
    }

    public TaishanStateBackend setWriteQueueFlushCount(int count) {
        settings.set(TaishanOptions.WRITE_QUEUE_FLUSH_COUNT, count);
        return this;
    }

    public TaishanStateBackend setWriteQueueFlushInterval(Duration interval) {
        settings.set(TaishanOptions.WRITE_QUEUE_FLUSH_INTERVAL, interval);
        return this;
    }

    public TaishanStateBackend setWriteQueueMaxBytes(MemorySize bytes) {
        settings.set(TaishanOptions.WRITE_QUEUE_MAX_BYTES, bytes);
        return this;
    }

    public TaishanStateBackend setTimerService(TaishanOptions.TimerServiceType type) {
        settings.set(TaishanOptions.TIMER_SERVICE, type);
        return this;
    }

    public TaishanStateBackend setTablePrefix(String prefix) {
        settings.set(TaishanOptions.TABLE_PREFIX, prefix);
        validate(settings);
        return this;
    }

    public String getKvAddress() {
        return settings.get(TaishanOptions.KV_ADDRESS);
    }

    public TaishanOptions.TimerServiceType getTimerService() {
        return settings.get(TaishanOptions.TIMER_SERVICE);
    }

    /** The table that an operator of a job uses. */
    public String tableName(JobID jobId, String operatorIdentifier) {
        return TableNames.of(settings.get(TaishanOptions.TABLE_PREFIX), jobId, operatorIdentifier);
    }

    // ---- the StateBackend contract

    /** Flink 2: whether operators with asynchronous state get Taishan's asynchronous backend. */
    protected boolean asyncStateBatchedReads() {
        return settings.get(TaishanOptions.ASYNC_STATE_BATCHED_READS);
    }

    @Override
    public boolean supportsNoClaimRestoreMode() {
        // A checkpoint after a restore never references the restored checkpoint's snapshots:
        // they are rolled back to or cloned, and our own new snapshots are taken.
        return true;
    }

    @Override
    public boolean supportsSavepointFormat(SavepointFormatType formatType) {
        return formatType == SavepointFormatType.NATIVE
                || formatType == SavepointFormatType.CANONICAL;
    }

    @Override
    public <K> AbstractKeyedStateBackend<K> createKeyedStateBackend(
            KeyedStateBackendParameters<K> parameters) throws BackendBuildingException {
        return new TaishanKeyedStateBackendBuilder<>(
                        parameters.getKvStateRegistry(),
                        parameters.getKeySerializer(),
                        parameters.getEnv().getUserCodeClassLoader().asClassLoader(),
                        parameters.getNumberOfKeyGroups(),
                        parameters.getKeyGroupRange(),
                        parameters.getEnv().getExecutionConfig(),
                        parameters.getTtlTimeProvider(),
                        stateTracking(parameters.getMetricGroup()),
                        parameters.getStateHandles(),
                        getCompressionDecorator(parameters.getEnv().getExecutionConfig()),
                        parameters.getCancelStreamRegistry(),
                        clientConfig(),
                        tableName(parameters.getJobID(), parameters.getOperatorIdentifier()),
                        writeQueueConfig(),
                        readPathConfig(),
                        parameters.getEnv().getMemoryManager(),
                        parameters.getManagedMemoryFraction(),
                        settings.get(TaishanOptions.TIMER_SERVICE),
                        settings.get(TaishanOptions.TIMER_CACHE_SIZE),
                        settings.get(TaishanOptions.TTL_CLOCK_REPORT_INTERVAL),
                        settings.get(TaishanOptions.CHECKPOINT_DURABLE),
                        parameters.getMetricGroup())
                .build();
    }

    @Override
    public OperatorStateBackend createOperatorStateBackend(
            OperatorStateBackendParameters parameters) throws BackendBuildingException {
        return new DefaultOperatorStateBackendBuilder(
                        parameters.getEnv().getUserCodeClassLoader().asClassLoader(),
                        parameters.getEnv().getExecutionConfig(),
                        true,
                        parameters.getStateHandles(),
                        parameters.getCancelStreamRegistry())
                .build();
    }

    KvClientConfig clientConfig() {
        String addresses = settings.get(TaishanOptions.KV_ADDRESS);
        if (addresses == null || addresses.isBlank()) {
            throw new IllegalConfigurationException(
                    "The Taishan state backend needs the kv-server address: set "
                            + TaishanOptions.KV_ADDRESS.key()
                            + " (host:port[,host:port...]).");
        }
        KvClientConfig.Builder config =
                KvClientConfig.forAddresses(addresses)
                        .requestTimeout(settings.get(TaishanOptions.KV_REQUEST_TIMEOUT))
                        .maxAttempts(settings.get(TaishanOptions.KV_MAX_ATTEMPTS))
                        .tls(tls(settings));
        String tokenFile = settings.get(TaishanOptions.KV_TOKEN_FILE);
        if (tokenFile != null) {
            // Read here, on the TaskManager that connects: the path is that machine's.
            try {
                config.tokenFile(Path.of(tokenFile));
            } catch (IllegalArgumentException e) {
                throw new IllegalConfigurationException(
                        TaishanOptions.KV_TOKEN_FILE.key() + ": " + e.getMessage(), e);
            }
        } else {
            config.token(settings.get(TaishanOptions.KV_TOKEN));
        }
        return config.build();
    }

    /** The client's TLS settings, or null for plaintext; the files are read when it connects. */
    @Nullable
    private static KvClientTls tls(Configuration settings) {
        if (!settings.get(TaishanOptions.KV_TLS_ENABLED)) {
            return null;
        }
        String trust = settings.get(TaishanOptions.KV_TLS_TRUST_CERT_FILE);
        KvClientTls tls =
                trust == null ? KvClientTls.systemTrust() : KvClientTls.trusting(Path.of(trust));
        String cert = settings.get(TaishanOptions.KV_TLS_CERT_FILE);
        String key = settings.get(TaishanOptions.KV_TLS_KEY_FILE);
        return cert == null ? tls : tls.withClientCertificate(Path.of(cert), Path.of(key));
    }

    /** The TLS and token options fit together; no file is read (this runs on the client too). */
    private static void validateSecurity(Configuration settings) {
        boolean tls = settings.get(TaishanOptions.KV_TLS_ENABLED);
        for (ConfigOption<String> file :
                List.of(
                        TaishanOptions.KV_TLS_TRUST_CERT_FILE,
                        TaishanOptions.KV_TLS_CERT_FILE,
                        TaishanOptions.KV_TLS_KEY_FILE)) {
            if (!tls && settings.get(file) != null) {
                // Silently plaintext would be worse than no start.
                throw new IllegalArgumentException(
                        file.key()
                                + " is set but "
                                + TaishanOptions.KV_TLS_ENABLED.key()
                                + " is false");
            }
        }
        if ((settings.get(TaishanOptions.KV_TLS_CERT_FILE) == null)
                != (settings.get(TaishanOptions.KV_TLS_KEY_FILE) == null)) {
            throw new IllegalArgumentException(
                    TaishanOptions.KV_TLS_CERT_FILE.key()
                            + " and "
                            + TaishanOptions.KV_TLS_KEY_FILE.key()
                            + " must be set together");
        }
        String token = settings.get(TaishanOptions.KV_TOKEN);
        if (token != null && settings.get(TaishanOptions.KV_TOKEN_FILE) != null) {
            throw new IllegalArgumentException(
                    "set "
                            + TaishanOptions.KV_TOKEN.key()
                            + " or "
                            + TaishanOptions.KV_TOKEN_FILE.key()
                            + ", not both");
        }
        if (token != null) {
            String problem = BearerTokens.problemWith(token);
            if (problem != null) {
                throw new IllegalArgumentException(TaishanOptions.KV_TOKEN.key() + ": " + problem);
            }
        }
    }

    WriteQueueConfig writeQueueConfig() {
        return writeQueueConfig(settings);
    }

    ReadPathConfig readPathConfig() {
        return readPathConfig(settings);
    }

    private static ReadPathConfig readPathConfig(Configuration settings) {
        return new ReadPathConfig(
                ReadPathConfig.parseCacheType(settings.get(TaishanOptions.CACHE_TYPE)),
                settings.getOptional(TaishanOptions.CACHE_SIZE)
                        .map(MemorySize::getBytes)
                        .orElse(null),
                settings.getOptional(TaishanOptions.CACHE_LOCAL_DIR)
                        .map(
                                dir ->
                                        new LocalDiskCache.Spec(
                                                dir,
                                                settings.get(TaishanOptions.CACHE_LOCAL_SIZE)
                                                        .getBytes()))
                        .orElse(null),
                settings.get(TaishanOptions.BLOOM_FILTER_ENABLED));
    }

    /**
     * The read cache takes the subtask's share of managed memory unless {@code taishan.cache.size}
     * sets its size, so Flink budgets it as it budgets RocksDB's block cache.
     */
    @Override
    public boolean useManagedMemory() {
        return readPathConfig().usesManagedMemory();
    }

    public TaishanStateBackend setCacheType(String type) {
        settings.set(TaishanOptions.CACHE_TYPE, type);
        validate(settings);
        return this;
    }

    public TaishanStateBackend setCacheSize(MemorySize bytes) {
        settings.set(TaishanOptions.CACHE_SIZE, bytes);
        return this;
    }

    /**
     * A local disk tier of the read cache in {@code directory}, using at most {@code size} ({@code
     * taishan.cache.local-dir}, {@code taishan.cache.local-size}).
     */
    public TaishanStateBackend setLocalCache(String directory, MemorySize size) {
        settings.set(TaishanOptions.CACHE_LOCAL_DIR, directory);
        settings.set(TaishanOptions.CACHE_LOCAL_SIZE, size);
        validate(settings);
        return this;
    }

    public TaishanStateBackend setTtlClockReportInterval(Duration interval) {
        settings.set(TaishanOptions.TTL_CLOCK_REPORT_INTERVAL, interval);
        return this;
    }

    /**
     * Whether checkpoints are copied into checkpoint storage ({@code taishan.checkpoint.durable}).
     */
    public TaishanStateBackend setDurableCheckpoints(boolean durable) {
        settings.set(TaishanOptions.CHECKPOINT_DURABLE, durable);
        return this;
    }

    public TaishanStateBackend setBloomFilterEnabled(boolean enabled) {
        settings.set(TaishanOptions.BLOOM_FILTER_ENABLED, enabled);
        return this;
    }

    private static WriteQueueConfig writeQueueConfig(Configuration settings) {
        return new WriteQueueConfig(
                settings.get(TaishanOptions.WRITE_QUEUE_FLUSH_BYTES).getBytes(),
                settings.get(TaishanOptions.WRITE_QUEUE_FLUSH_COUNT),
                settings.get(TaishanOptions.WRITE_QUEUE_FLUSH_INTERVAL),
                settings.get(TaishanOptions.WRITE_QUEUE_MAX_BYTES).getBytes());
    }

    /** Cheap checks only: no connection. */
    private static void validate(Configuration settings) {
        try {
            String addresses = settings.get(TaishanOptions.KV_ADDRESS);
            if (addresses != null) {
                KvClientConfig.forAddresses(addresses);
            }
            writeQueueConfig(settings);
            readPathConfig(settings);
            TableNames.checkPrefix(settings.get(TaishanOptions.TABLE_PREFIX));
            validateSecurity(settings);
        } catch (IllegalArgumentException e) {
            throw new IllegalConfigurationException(
                    "Invalid Taishan state backend configuration: " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "TaishanStateBackend{" + settings + '}';
    }
}
