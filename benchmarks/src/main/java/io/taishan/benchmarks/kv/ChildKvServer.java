package io.taishan.benchmarks.kv;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A kv-server in a child JVM on this JVM's classpath, so that its GC, JIT and RocksDB threads are
 * not billed to the client being measured. It runs {@link BenchKvServerMain}, which prints its
 * address and stops when its stdin closes, so it cannot outlive the benchmark. Shared by the kv
 * service benchmark and the state backend benchmark ({@code io.taishan.benchmarks.state}).
 */
public final class ChildKvServer implements AutoCloseable {
    private static final long START_TIMEOUT_SECONDS = 60;

    private final Process process;
    private final String address;

    private ChildKvServer(Process process, String address) {
        this.process = process;
        this.address = address;
    }

    public static ChildKvServer start(Path dataDir, Path log) throws IOException {
        return start(dataDir, List.of(), log);
    }

    /** An environment variable: more JVM options for the child, separated by spaces. */
    public static final String EXTRA_JVM_OPTIONS = "TAISHAN_BENCH_KV_JVM_OPTS";

    /**
     * An environment variable: the CPUs the child may run on, in {@code taskset -c} form ({@code
     * 1}, {@code 2-3}). A benchmark that pins its own JVM to other CPUs so models a kv-server that
     * runs beside the TaskManager, not on its cores, as it does in production.
     */
    public static final String CPUS = "TAISHAN_BENCH_KV_CPUS";

    /** With {@link BenchKvServerMain}'s options after the data dir ({@code --durable}, ...). */
    public static ChildKvServer start(Path dataDir, List<String> options, Path log)
            throws IOException {
        List<String> args = new ArrayList<>();
        args.add(dataDir.toString());
        args.addAll(options);
        return start(BenchKvServerMain.class.getName(), args, log);
    }

    /**
     * A child running {@code mainClass} with {@code args}; the main must print {@link
     * BenchKvServerMain#ADDRESS_LINE} and stop when its stdin closes.
     */
    public static ChildKvServer start(String mainClass, List<String> args, Path log)
            throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>();
        String cpus = System.getenv(CPUS);
        if (cpus != null && !cpus.isBlank()) {
            // Without it the child would inherit this JVM's CPUs.
            command.addAll(List.of("taskset", "-c", cpus.trim()));
        }
        command.addAll(List.of(java, "-Xmx1g", "-XX:+UseG1GC"));
        // E.g. a JFR recording of the server (bin/taishan-nexmark --profile).
        String extra = System.getenv(EXTRA_JVM_OPTIONS);
        if (extra != null && !extra.isBlank()) {
            command.addAll(List.of(extra.trim().split("\\s+")));
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass));
        command.addAll(args);
        Process process =
                new ProcessBuilder(command)
                        .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                        .start();
        try {
            String address = awaitAddress(process, log);
            return new ChildKvServer(process, address);
        } catch (IOException | RuntimeException e) {
            process.destroyForcibly();
            throw e;
        }
    }

    private static String awaitAddress(Process process, Path log) throws IOException {
        BufferedReader stdout =
                new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_TIMEOUT_SECONDS);
        String line;
        while ((line = stdout.readLine()) != null) {
            if (line.startsWith(BenchKvServerMain.ADDRESS_LINE)) {
                drainInBackground(stdout);
                return line.substring(BenchKvServerMain.ADDRESS_LINE.length()).trim();
            }
            if (System.nanoTime() > deadline) {
                break;
            }
        }
        throw new IOException(
                "the kv-server child JVM did not report its address within "
                        + START_TIMEOUT_SECONDS
                        + " s; see "
                        + log);
    }

    /** The child must never block on a full stdout pipe. */
    private static void drainInBackground(BufferedReader stdout) {
        Thread drain =
                new Thread(
                        () -> {
                            try {
                                while (stdout.readLine() != null) {
                                    // discarded: the child's log goes to the log file
                                }
                            } catch (IOException ignored) {
                                // the child is gone
                            }
                        },
                        "kv-server-stdout");
        drain.setDaemon(true);
        drain.start();
    }

    public String address() {
        return address;
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public long pid() {
        return process.pid();
    }

    /** The port the child serves on. */
    public int port() {
        return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
    }

    /** SIGKILL, as a lost node: no graceful stop; returns once the process is gone. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException(
                    "kv-server child " + pid() + " still runs after SIGKILL");
        }
    }

    /** Closing stdin asks for a graceful stop; a child that hangs is killed. */
    @Override
    public void close() {
        try {
            process.getOutputStream().close();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (IOException e) {
            process.destroyForcibly();
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
