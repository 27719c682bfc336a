package io.taishan.benchmarks.kv;

import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The kv-server side of the benchmark: a default-configured node on an ephemeral loopback port over
 * a given data dir. As a child JVM's main, it prints {@value #ADDRESS_LINE}{@code host:port} and
 * runs until its stdin closes, which also happens when the benchmark JVM dies.
 */
public final class BenchKvServerMain {
    public static final String ADDRESS_LINE = "TAISHAN_KV_BENCH_ADDRESS=";

    private BenchKvServerMain() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: BenchKvServerMain DATA_DIR");
            System.exit(2);
        }
        try (EmbeddedKvServer server = startServer(Path.of(args[0]))) {
            System.out.println(ADDRESS_LINE + server.address());
            System.out.flush();
            while (System.in.read() != -1) {
                // wait for the parent to close our stdin
            }
        }
    }

    static ServerUnderTest startInProcess(Path dataDir) throws IOException {
        EmbeddedKvServer server = startServer(dataDir);
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

    private static EmbeddedKvServer startServer(Path dataDir) throws IOException {
        Files.createDirectories(dataDir);
        return EmbeddedKvServer.start(KvServerConfig.builder().dataDir(dataDir).build());
    }
}
