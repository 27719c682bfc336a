package io.taishan.benchmarks.kv;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The kv-server the benchmark talks to, wherever it runs. */
interface ServerUnderTest extends AutoCloseable {

    String address();

    String description();

    @Override
    void close();

    static ServerUnderTest start(BenchOptions options, Path dataDir) throws IOException {
        return switch (options.serverMode()) {
            case EXTERNAL -> external(options.address());
            case EMBEDDED -> BenchKvServerMain.startInProcess(dataDir);
            case CHILD -> child(dataDir);
        };
    }

    private static ServerUnderTest child(Path dataDir) throws IOException {
        Files.createDirectories(dataDir);
        Path log = dataDir.resolveSibling(dataDir.getFileName() + "-kv-server.log");
        KvServiceBenchmark.progress("starting the kv-server in a child JVM, log " + log);
        ChildKvServer child = ChildKvServer.start(dataDir, log);
        return new ServerUnderTest() {
            @Override
            public String address() {
                return child.address();
            }

            @Override
            public String description() {
                return "kv-server in a child JVM (pid " + child.pid() + ", -Xmx1g), loopback gRPC";
            }

            @Override
            public void close() {
                child.close();
            }
        };
    }

    private static ServerUnderTest external(String address) {
        return new ServerUnderTest() {
            @Override
            public String address() {
                return address;
            }

            @Override
            public String description() {
                return "kv-server started elsewhere";
            }

            @Override
            public void close() {}
        };
    }
}
