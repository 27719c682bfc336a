package io.taishan.benchmarks.job;

import io.taishan.benchmarks.kv.ChildKvServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;

/**
 * {@code TAISHAN}: {@code TaishanStateBackendFactory} on a kv-server child JVM ({@link
 * IdleStateKvServerMain}, which samples the store every second), REMOTE timers and the off-heap
 * read cache in the slot's managed memory: the backend's defaults, chosen by {@code
 * state.backend.type} as a user chooses them.
 */
public final class TaishanJobBackend implements JobBackend.Provider {
    public static final String TAISHAN = "TAISHAN";
    private static final String FACTORY = "io.taishan.backend.TaishanStateBackendFactory";
    private static final long SAMPLE_MILLIS = 1000;

    @Override
    public Set<String> backends() {
        return Set.of(TAISHAN);
    }

    /**
     * Environment variables naming a kv-server that is already running (its address and pid): the
     * runs use it instead of starting one each, as jobs use a long-running service.
     */
    public static final String SHARED_ADDRESS = "TAISHAN_BENCH_KV_ADDRESS";

    public static final String SHARED_PID = "TAISHAN_BENCH_KV_PID";

    @Override
    public JobBackend open(
            String backend, Path workDir, Map<String, String> serverConfig, boolean sampleStore)
            throws IOException {
        String shared = System.getenv(SHARED_ADDRESS);
        if (shared != null && !shared.isBlank()) {
            if (!serverConfig.isEmpty() || sampleStore) {
                throw new IllegalArgumentException(
                        "a shared kv-server ("
                                + SHARED_ADDRESS
                                + ") takes no per-run settings or store samples: "
                                + serverConfig);
            }
            return shared(shared.trim(), Long.parseLong(System.getenv(SHARED_PID).trim()));
        }
        Path samples = workDir.resolve("store-samples.csv");
        List<String> args = new ArrayList<>();
        args.add(Files.createDirectories(workDir.resolve("kv-data")).toString());
        args.add(samples.toString());
        args.add(Long.toString(sampleStore ? SAMPLE_MILLIS : 0));
        serverConfig.forEach((k, v) -> args.add(k + "=" + v));
        ChildKvServer server =
                ChildKvServer.start(
                        IdleStateKvServerMain.class.getName(),
                        args,
                        workDir.resolve("kv-server.log"));
        return new JobBackend() {
            private boolean closed;

            @Override
            public Configuration configuration() {
                return clientConfiguration(server.address());
            }

            @Override
            public String description() {
                return "TaishanStateBackend (REMOTE timers, off-heap read cache in managed memory,"
                        + " Bloom filters on; kv-server child JVM -Xmx1g pid "
                        + server.pid()
                        + ", "
                        + serverConfig
                        + ")";
            }

            @Override
            public long serverPid() {
                return server.pid();
            }

            @Override
            public List<StoreSample> storeSamples() {
                close();
                if (!Files.exists(samples)) {
                    return List.of();
                }
                try {
                    List<StoreSample> result = new ArrayList<>();
                    for (String line : Files.readAllLines(samples)) {
                        if (line.isEmpty() || line.startsWith("epoch")) {
                            continue;
                        }
                        String[] f = line.split(",");
                        result.add(
                                new StoreSample(
                                        Long.parseLong(f[0]),
                                        Long.parseLong(f[1]),
                                        Long.parseLong(f[2]),
                                        Long.parseLong(f[3]),
                                        Long.parseLong(f[4]),
                                        Long.parseLong(f[5]),
                                        Long.parseLong(f[6]),
                                        Long.parseLong(f[7])));
                    }
                    return result;
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            @Override
            public synchronized void close() {
                if (!closed) {
                    closed = true;
                    server.close();
                }
            }
        };
    }

    private static JobBackend shared(String address, long pid) {
        return new JobBackend() {
            @Override
            public Configuration configuration() {
                return clientConfiguration(address);
            }

            @Override
            public String description() {
                return "TaishanStateBackend (REMOTE timers, off-heap read cache in managed memory,"
                        + " Bloom filters on; a shared kv-server, pid "
                        + pid
                        + ", running before this run and after it)";
            }

            @Override
            public long serverPid() {
                return pid;
            }

            @Override
            public List<StoreSample> storeSamples() {
                return List.of();
            }

            @Override
            public void close() {}
        };
    }

    private static Configuration clientConfiguration(String address) {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, FACTORY);
        config.setString("taishan.kv.address", address);
        config.setString("taishan.timer-service", "REMOTE");
        config.setString("taishan.cache.type", "off-heap");
        return config;
    }
}
