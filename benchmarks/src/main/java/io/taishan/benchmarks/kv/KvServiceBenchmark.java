package io.taishan.benchmarks.kv;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.NodeHealth;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * The kv service benchmark: {@code Get} / {@code MultiGet} latency, write throughput by batch size,
 * and snapshot / restore / clone time by shard size, through the real client over loopback gRPC
 * against a real kv-server. It prints a Markdown report on stdout; progress goes to stderr.
 */
public final class KvServiceBenchmark {
    private KvServiceBenchmark() {}

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        if (args.length > 0 && (args[0].equals("--help") || args[0].equals("-h"))) {
            System.out.println(BenchOptions.USAGE);
            return;
        }
        BenchOptions options;
        try {
            options = BenchOptions.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.err.println(BenchOptions.USAGE);
            System.exit(2);
            return;
        }
        run(options, System.out);
    }

    static void run(BenchOptions options, PrintStream out) throws Exception {
        long start = System.nanoTime();
        Path tempDir = null;
        Path dataDir = options.dataDir();
        if (dataDir == null && options.serverMode() != BenchOptions.ServerMode.EXTERNAL) {
            tempDir = Files.createTempDirectory("taishan-kv-bench");
            dataDir = tempDir.resolve("data");
        }
        boolean succeeded = false;
        try (ServerUnderTest server = ServerUnderTest.start(options, dataDir);
                KvStore store =
                        KvStores.connect(
                                KvClientConfig.forAddresses(server.address())
                                        .requestTimeout(Duration.ofMinutes(5))
                                        .build())) {
            printHeader(options, server, store, out);
            Quiescence quiescence = new Quiescence(dataDir);
            quiescence.await();
            if (options.suites().contains("read")) {
                progress("read: Get and MultiGet");
                new ReadBenchmark(store, options, out).run();
            }
            if (options.suites().contains("write")) {
                quiescence.await();
                progress("write: batch sizes " + options.writeBatchSizes());
                new WriteBenchmark(store, options, out).run();
            }
            if (options.suites().contains("snapshot")) {
                progress("snapshot: shard sizes " + options.snapshotSizesMib() + " MiB");
                new SnapshotBenchmark(store, options, quiescence, out).run();
            }
            succeeded = true;
        } finally {
            // On failure the server's log and data stay for a post-mortem.
            if (tempDir != null && succeeded) {
                deleteRecursively(tempDir);
            } else if (tempDir != null) {
                progress("failed; the kv-server's data and log are kept in " + tempDir);
            }
        }
        out.printf(
                "Whole run: %.0f s; load average at the end: %.2f%n",
                (System.nanoTime() - start) / 1e9,
                ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    }

    private static void printHeader(
            BenchOptions options, ServerUnderTest server, KvStore store, PrintStream out) {
        Runtime runtime = Runtime.getRuntime();
        out.printf("## Taishan kv service benchmark, %s%n%n", Instant.now());
        out.printf(
                "- client JVM: Java %s (%s), %d CPUs visible, max heap %d MiB%n",
                System.getProperty("java.version"),
                System.getProperty("java.vm.name"),
                runtime.availableProcessors(),
                runtime.maxMemory() >> 20);
        out.printf("- server: %s at %s%n", server.description(), server.address());
        for (NodeHealth node : store.health()) {
            out.printf("- node %s: %s, version %s%n", node.name(), node.status(), node.version());
        }
        out.printf(
                "- load average at start: %.2f%n- options: runs=%d, sizes=%s MiB%s%n%n",
                ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
                options.runs(),
                options.snapshotSizesMib(),
                options.quick() ? ", quick" : "");
    }

    static void progress(String message) {
        System.err.printf("[%tT] %s%n", System.currentTimeMillis(), message);
    }

    static void deleteRecursively(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
