package io.taishan.benchmarks.kv;

import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.durable.DurableOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The kv-server side of the benchmark: a default-configured node on an ephemeral loopback port over
 * a given data dir. As a child JVM's main, it prints {@value #ADDRESS_LINE}{@code host:port} and
 * runs until its stdin closes, which also happens when the benchmark JVM dies. Options after the
 * data dir: {@value #DURABLE} (durable checkpoints on: {@code durable.enabled}, file systems of
 * this classpath) and {@value #PORT} {@code N} (a fixed port, for a node started again in the place
 * of a lost one).
 */
public final class BenchKvServerMain {
    public static final String ADDRESS_LINE = "TAISHAN_KV_BENCH_ADDRESS=";
    public static final String DURABLE = "--durable";
    public static final String PORT = "--port";

    private BenchKvServerMain() {}

    public static void main(String[] args) throws IOException {
        KvServerConfig.Builder config = KvServerConfig.builder();
        boolean usage = args.length < 1;
        for (int i = 1; i < args.length && !usage; i++) {
            if (DURABLE.equals(args[i])) {
                DurableOptions off = DurableOptions.disabled();
                config.durable(
                        new DurableOptions(
                                true,
                                off.flinkConfDir(),
                                off.flinkConfig(),
                                off.pluginsDir(),
                                off.transferThreads(),
                                off.maxAttempts(),
                                off.retryBackoff(),
                                off.transferTimeout()));
            } else if (PORT.equals(args[i]) && i + 1 < args.length) {
                config.port(Integer.parseInt(args[++i]));
            } else {
                usage = true;
            }
        }
        if (usage) {
            System.err.println(
                    "usage: BenchKvServerMain DATA_DIR [" + DURABLE + "] [" + PORT + " N]");
            System.exit(2);
        }
        try (EmbeddedKvServer server = startServer(config, Path.of(args[0]))) {
            System.out.println(ADDRESS_LINE + server.address());
            System.out.flush();
            while (System.in.read() != -1) {
                // wait for the parent to close our stdin
            }
        }
    }

    static ServerUnderTest startInProcess(Path dataDir) throws IOException {
        EmbeddedKvServer server = startServer(KvServerConfig.builder(), dataDir);
        return new ServerUnderTest() {
            @Override
            public String address() {
                return server.address();
            }

            @Override
            public String description() {
                return "kv-server embedded in the benchmark JVM, loopback gRPC";
            }

            @Override
            public void close() {
                server.close();
            }
        };
    }

    private static EmbeddedKvServer startServer(KvServerConfig.Builder config, Path dataDir)
            throws IOException {
        Files.createDirectories(dataDir);
        return EmbeddedKvServer.start(config.dataDir(dataDir).build());
    }
}
