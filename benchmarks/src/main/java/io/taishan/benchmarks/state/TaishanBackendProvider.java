package io.taishan.benchmarks.state;

import io.taishan.backend.TaishanStateBackendFactory;
import io.taishan.benchmarks.kv.BenchKvServerMain;
import io.taishan.benchmarks.kv.ChildKvServer;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.TableInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.memory.MemoryManager;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.util.FileUtils;

/**
 * {@code TAISHAN}: {@code TaishanStateBackend} on a kv-server in a child JVM (loopback gRPC,
 * default server configuration), so the server's GC, JIT and RocksDB are not billed to the measured
 * thread, though they share the machine's cores. With {@link BackendSettings#serverHome} the trials
 * of this JVM share one child, as they share this JVM (a long-running kv-server has served many
 * operators before this one; a child started for one trial would bill its class loading and first
 * compilations to it), and each trial drops its tables when it closes. Made from a Flink {@code
 * Configuration} through {@code TaishanStateBackendFactory}, as {@code state.backend.type} makes
 * it, so the read cache is set by its string keys {@value #CACHE_TYPE} and {@value #CACHE_SIZE}: a
 * backend that does not know them ignores them, and then every {@code cache} setting runs without a
 * cache. {@code TAISHAN_DURABLE} is the same with durable checkpoints: the child with {@code
 * durable.enabled}, the backend with {@value #DURABLE}; its trials with a server of their own can
 * lose the node ({@link BackendUnderTest#loseNode}).
 */
public final class TaishanBackendProvider implements BenchmarkBackendProvider {
    public static final String TAISHAN = "TAISHAN";
    public static final String TAISHAN_DURABLE = "TAISHAN_DURABLE";

    static final String KV_ADDRESS = "taishan.kv.address";
    static final String CACHE_TYPE = "taishan.cache.type";
    static final String CACHE_SIZE = "taishan.cache.size";
    static final String CACHE_LOCAL_DIR = "taishan.cache.local-dir";
    static final String CACHE_LOCAL_SIZE = "taishan.cache.local-size";
    static final String DURABLE = "taishan.checkpoint.durable";

    /** The metric group of the store calls: {@code taishan.rpc.<kind>.count} (MeteredKvStore). */
    private static final String RPC_GROUP = "taishan.rpc.";

    private static final String COUNT = ".count";
    private static final long MANAGED_MEMORY_BYTES = 32L << 20;
    private static final int PAGE_SIZE = 32 << 10;
    private static final Set<String> READ_KINDS = Set.of("get", "multi_get", "scan");

    @Override
    public Set<String> backends() {
        return Set.of(TAISHAN, TAISHAN_DURABLE);
    }

    @Override
    public boolean hasReadCache(String backend) {
        return true;
    }

    /** The shared child, by home; stopped when this JVM exits (its stdin closes). */
    private static final Map<Path, ChildKvServer> SHARED = new HashMap<>();

    @Override
    public BackendUnderTest open(String backend, BackendSettings settings) throws Exception {
        boolean shared = settings.serverHome() != null;
        Path home = shared ? settings.serverHome() : settings.workDir();
        Path dataDir = home.resolve("kv-data");
        Path log = home.resolve("kv-server.log");
        boolean durable = TAISHAN_DURABLE.equals(backend);
        List<String> serverOptions =
                durable ? List.of(BenchKvServerMain.DURABLE) : List.<String>of();
        ChildKvServer server;
        if (shared) {
            synchronized (SHARED) {
                server = SHARED.get(home);
                if (server == null || !server.isAlive()) {
                    Files.createDirectories(dataDir);
                    server = ChildKvServer.start(dataDir, serverOptions, log);
                    SHARED.put(home, server);
                }
            }
        } else {
            Files.createDirectories(dataDir);
            server = ChildKvServer.start(dataDir, serverOptions, log);
        }
        try {
            Map<String, String> options = new LinkedHashMap<>();
            options.put(KV_ADDRESS, server.address());
            if (durable) {
                options.put(DURABLE, "true");
            }
            ReadCache cache = settings.readCache();
            options.put(CACHE_TYPE, cache.enabled() ? "off-heap" : "none");
            if (cache.enabled()) {
                options.put(CACHE_SIZE, cache.memorySize());
            }
            if (cache.localTier()) {
                options.put(
                        CACHE_LOCAL_DIR,
                        Path.of(System.getProperty("java.io.tmpdir"), "taishan-bench-local-cache")
                                .toString());
                options.put(CACHE_LOCAL_SIZE, cache.localTierSize());
            }
            Configuration config = new Configuration();
            options.forEach(
                    (key, value) ->
                            config.set(
                                    ConfigOptions.key(key).stringType().noDefaultValue(), value));
            StateBackend taishan =
                    new TaishanStateBackendFactory()
                            .createFromConfig(config, getClass().getClassLoader());
            String description =
                    "TaishanStateBackend "
                            + options
                            + ", "
                            + cache.describe()
                            + ", kv-server child JVM pid "
                            + server.pid();
            // Asked for by every keyed backend; used only when the cache takes managed memory,
            // which this benchmark never lets it do: it sizes the cache with taishan.cache.size.
            MemoryManager memoryManager = MemoryManager.create(MANAGED_MEMORY_BYTES, PAGE_SIZE);
            return new Remote(
                    taishan,
                    description,
                    server,
                    shared,
                    dataDir,
                    serverOptions,
                    log,
                    memoryManager);
        } catch (Exception | Error e) {
            if (!shared) {
                server.close();
            }
            throw e;
        }
    }

    private static final class Remote implements BackendUnderTest {
        private final StateBackend backend;
        private final String description;
        private final boolean shared;
        private final Path dataDir;
        private final List<String> serverOptions;
        private final Path log;
        private final MemoryManager memoryManager;
        private ChildKvServer server;

        Remote(
                StateBackend backend,
                String description,
                ChildKvServer server,
                boolean shared,
                Path dataDir,
                List<String> serverOptions,
                Path log,
                MemoryManager memoryManager) {
            this.backend = backend;
            this.description = description;
            this.server = server;
            this.shared = shared;
            this.dataDir = dataDir;
            this.serverOptions = serverOptions;
            this.log = log;
            this.memoryManager = memoryManager;
        }

        /**
         * SIGKILL to the child, its data dir deleted as a lost disk would be, and an empty node
         * started in its place on the same port (so the same address), with the same options.
         */
        @Override
        public boolean loseNode() throws Exception {
            if (shared) {
                throw new IllegalStateException(
                        "a kv-server shared by the trials of this JVM is not lost by one of them");
            }
            int port = server.port();
            server.kill();
            FileUtils.deleteDirectory(dataDir.toFile());
            Files.createDirectories(dataDir);
            List<String> options = new ArrayList<>(serverOptions);
            options.add(BenchKvServerMain.PORT);
            options.add(Integer.toString(port));
            server = ChildKvServer.start(dataDir, options, log);
            return true;
        }

        @Override
        public StateHome stateHome() {
            return new StateHome("kv-server child JVM", server.pid(), dataDir);
        }

        @Override
        public Map<String, Long> rpcsByKind(CapturingMetricGroup metrics) {
            // Every kind the backend counts, found by name: the set of kinds may change with the
            // backend, and a harness comparing two versions must count what each one calls.
            Map<String, Long> byKind = new TreeMap<>();
            metrics.metrics()
                    .forEach(
                            (name, metric) -> {
                                if (name.startsWith(RPC_GROUP)
                                        && name.endsWith(COUNT)
                                        && metric instanceof Counter counter
                                        && counter.getCount() > 0) {
                                    byKind.merge(
                                            name.substring(
                                                    RPC_GROUP.length(),
                                                    name.length() - COUNT.length()),
                                            counter.getCount(),
                                            Long::sum);
                                }
                            });
            return byKind;
        }

        @Override
        public Map<String, Object> environment() {
            return Map.of("getMemoryManager", memoryManager);
        }

        @Override
        public StateBackend stateBackend() {
            return backend;
        }

        @Override
        public String description() {
            return description;
        }

        /** The counters of the keyed backend last asked about, found once: read per invocation. */
        private CapturingMetricGroup resolvedFor;

        private List<Counter> readCounters = List.of();
        private List<Counter> allCounters = List.of();

        @Override
        public RpcCount rpcs(CapturingMetricGroup metrics) {
            if (metrics != resolvedFor) {
                List<Counter> reads = new ArrayList<>();
                List<Counter> all = new ArrayList<>();
                metrics.metrics()
                        .forEach(
                                (name, metric) -> {
                                    if (name.startsWith(RPC_GROUP)
                                            && name.endsWith(COUNT)
                                            && metric instanceof Counter counter) {
                                        all.add(counter);
                                        String kind =
                                                name.substring(
                                                        RPC_GROUP.length(),
                                                        name.length() - COUNT.length());
                                        if (READ_KINDS.contains(kind)) {
                                            reads.add(counter);
                                        }
                                    }
                                });
                if (all.isEmpty()) {
                    throw new IllegalStateException(
                            "the keyed backend registered no "
                                    + RPC_GROUP
                                    + "<kind>"
                                    + COUNT
                                    + " counters; it registered "
                                    + metrics.metrics().keySet());
                }
                resolvedFor = metrics;
                readCounters = reads;
                allCounters = all;
            }
            return new RpcCount(sum(readCounters), sum(allCounters));
        }

        private static long sum(List<Counter> counters) {
            long sum = 0;
            for (Counter counter : counters) {
                sum += counter.getCount();
            }
            return sum;
        }

        @Override
        public void close() {
            memoryManager.shutdown();
            if (!shared) {
                server.close();
                return;
            }
            // What this trial stored goes; the server stays for the next trial.
            try (KvStore store =
                    KvStores.connect(KvClientConfig.forAddresses(server.address()).build())) {
                for (TableInfo table : store.listTables()) {
                    store.dropTable(table.name());
                }
            }
        }
    }
}
