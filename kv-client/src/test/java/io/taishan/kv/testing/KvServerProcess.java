package io.taishan.kv.testing;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The real kv-server as a child JVM on an ephemeral loopback port, for tests whose own JVM must not
 * load {@code rocksdbjni} (Flink's {@code frocksdbjni} is there) or that kill the server.
 *
 * <p>The child's classpath is, in order: the system property {@value #CLASSPATH_PROPERTY}; else the
 * runnable jar named by {@value #JAR_PROPERTY} (its manifest points at its lib/ directory); else
 * this JVM's classpath, if it holds the server. Extra child-JVM flags can be given, separated by
 * spaces, in {@value #JVM_ARGS_PROPERTY}.
 *
 * <p>The child's stdout and stderr go to {@code <dataDir>.log} beside the data directory, and their
 * last lines into the message of any failure. A JVM shutdown hook kills a child left running.
 */
public final class KvServerProcess implements AutoCloseable {
    public static final String CLASSPATH_PROPERTY = "taishan.kvserver.classpath";
    public static final String JAR_PROPERTY = "taishan.kvserver.jar";
    public static final String JVM_ARGS_PROPERTY = "taishan.kvserver.jvmArgs";

    static final String SERVER_MAIN = "io.taishan.kv.server.KvServerMain";
    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);
    private static final Pattern LISTENING = Pattern.compile("^LISTENING (\\S+):(\\d+)\\s*$");
    private static final int TAIL_LINES = 100;

    private final Process process;
    private final Path logFile;
    private final ProcessOutput output;
    private final String host;
    private final int port;
    private final Thread shutdownHook;

    private KvServerProcess(
            Process process,
            Path logFile,
            ProcessOutput output,
            String host,
            int port,
            Thread shutdownHook) {
        this.process = process;
        this.logFile = logFile;
        this.output = output;
        this.host = host;
        this.port = port;
        this.shutdownHook = shutdownHook;
    }

    /**
     * Starts {@code KvServerMain --host 127.0.0.1 --port 0 --data-dir dataDir extraCliArgs...} and
     * returns once it printed {@code LISTENING host:port}. {@code --host} and {@code --port} in
     * {@code extraCliArgs} replace the defaults (a restart on the same port, a cluster config).
     */
    public static KvServerProcess start(Path dataDir, String... extraCliArgs) {
        return start(serverClasspath(), SERVER_MAIN, dataDir, STARTUP_TIMEOUT, extraCliArgs);
    }

    static KvServerProcess start(
            String classpath,
            String mainClass,
            Path dataDir,
            Duration startupTimeout,
            String... extraCliArgs) {
        Path logFile = dataDir.resolveSibling(dataDir.getFileName() + ".log");
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx512m");
        command.add("-XX:+UseSerialGC");
        String jvmArgs = System.getProperty(JVM_ARGS_PROPERTY, "").trim();
        if (!jvmArgs.isEmpty()) {
            command.addAll(Arrays.asList(jvmArgs.split("\\s+")));
        }
        command.add("-cp");
        command.add(classpath);
        command.add(mainClass);
        List<String> extra = Arrays.asList(extraCliArgs);
        if (!extra.contains("--host")) {
            command.add("--host");
            command.add("127.0.0.1");
        }
        if (!extra.contains("--port")) {
            command.add("--port");
            command.add("0");
        }
        command.add("--data-dir");
        command.add(dataDir.toAbsolutePath().toString());
        command.addAll(extra);

        Process process;
        ProcessOutput output;
        try {
            Files.createDirectories(dataDir);
            output = new ProcessOutput(logFile, String.join(" ", command));
            process = new ProcessBuilder(command).start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start the kv-server: " + command, e);
        }
        Thread hook =
                new Thread(() -> process.toHandle().destroyForcibly(), "kv-server-process-reaper");
        Runtime.getRuntime().addShutdownHook(hook);
        output.drain(process);

        String listening;
        try {
            listening = output.listening().get(startupTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException | InterruptedException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            process.toHandle().destroyForcibly();
            waitQuietly(process, Duration.ofSeconds(10));
            removeHook(hook);
            output.awaitDrained();
            String why =
                    e instanceof TimeoutException
                            ? "did not print 'LISTENING host:port' within " + startupTimeout
                            : e instanceof InterruptedException
                                    ? "was interrupted while starting"
                                    : "exited with code " + exitCode(process) + " before listening";
            throw new IllegalStateException(
                    "kv-server " + why + "; log " + logFile + ", last lines:\n" + output.tail(), e);
        }
        Matcher m = LISTENING.matcher(listening);
        if (!m.matches()) {
            throw new IllegalStateException("unexpected listening line: " + listening);
        }
        return new KvServerProcess(
                process, logFile, output, m.group(1), Integer.parseInt(m.group(2)), hook);
    }

    /** {@code host:port} as the server printed it. */
    public String address() {
        return host + ":" + port;
    }

    public int port() {
        return port;
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public long pid() {
        return process.pid();
    }

    public Path logFile() {
        return logFile;
    }

    /** The last lines the server printed (stdout and stderr interleaved). */
    public String recentOutput() {
        return output.tail();
    }

    /** Throws, with the server's last lines, if the process is gone. */
    public void checkAlive() {
        if (!process.isAlive()) {
            throw new IllegalStateException(
                    "kv-server at "
                            + address()
                            + " died with exit code "
                            + exitCode(process)
                            + "; log "
                            + logFile
                            + ", last lines:\n"
                            + output.tail());
        }
    }

    /**
     * Graceful stop: SIGTERM, so that the server flushes; SIGKILL if it is not gone after 30 s.
     * Returns the exit code.
     */
    public int stop() {
        // Through the handle: Process.destroy() would also close our ends of the pipes, losing
        // what the server prints while it shuts down.
        process.toHandle().destroy();
        if (!waitQuietly(process, STOP_TIMEOUT)) {
            process.toHandle().destroyForcibly();
            waitQuietly(process, STOP_TIMEOUT);
        }
        return finish();
    }

    /** SIGKILL: a crash, nothing flushed. Returns the exit code. */
    public int kill() {
        process.toHandle().destroyForcibly();
        waitQuietly(process, STOP_TIMEOUT);
        return finish();
    }

    @Override
    public void close() {
        stop();
    }

    @Override
    public String toString() {
        return "KvServerProcess[" + address() + ", pid " + process.pid() + "]";
    }

    private int finish() {
        removeHook(shutdownHook);
        output.awaitDrained();
        return exitCode(process);
    }

    private static int exitCode(Process process) {
        return process.isAlive() ? -1 : process.exitValue();
    }

    private static boolean waitQuietly(Process process, Duration timeout) {
        try {
            return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !process.isAlive();
        }
    }

    private static void removeHook(Thread hook) {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shutdownUnderWay) {
            // The hook is running or about to: it kills what is left.
        }
    }

    /** Where the server's classes come from; see the class comment for the order. */
    static String serverClasspath() {
        String classpath = System.getProperty(CLASSPATH_PROPERTY);
        if (classpath != null && !classpath.isBlank()) {
            return classpath;
        }
        String jar = System.getProperty(JAR_PROPERTY);
        if (jar != null && !jar.isBlank()) {
            if (!new File(jar).isFile()) {
                throw new IllegalStateException(
                        "-D" + JAR_PROPERTY + "=" + jar + " does not name an existing jar");
            }
            return jar;
        }
        ClassLoader system = ClassLoader.getSystemClassLoader();
        if (system.getResource(SERVER_MAIN.replace('.', '/') + ".class") != null) {
            if (system.getResource("org/rocksdb/FlinkCompactionFilter.class") != null) {
                throw new IllegalStateException(
                        "this JVM's classpath holds the kv-server but also Flink's frocksdbjni,"
                                + " which would shadow the server's rocksdbjni; set -D"
                                + JAR_PROPERTY
                                + "=<kv-server runnable jar> or -D"
                                + CLASSPATH_PROPERTY
                                + "=<its runtime classpath>");
            }
            return System.getProperty("java.class.path");
        }
        throw new IllegalStateException(
                "cannot find the kv-server to start: set -D"
                        + JAR_PROPERTY
                        + "=<path of the kv-server runnable jar> (`mvn -pl kv-server package`"
                        + " builds it) or -D"
                        + CLASSPATH_PROPERTY
                        + "=<its runtime classpath>, or put taishan-kv-server on the test"
                        + " classpath");
    }

    /**
     * Drains both output streams of the child into the log file and a tail of recent lines, and
     * spots the {@code LISTENING} line on stdout. Without draining, a chatty child would block on a
     * full pipe.
     */
    private static final class ProcessOutput {
        private final Writer log;
        private final ArrayDeque<String> tail = new ArrayDeque<>();
        private final CompletableFuture<String> listening = new CompletableFuture<>();
        private final List<Thread> drainers = new ArrayList<>(2);

        ProcessOutput(Path logFile, String commandLine) throws IOException {
            this.log =
                    Files.newBufferedWriter(
                            logFile,
                            StandardCharsets.UTF_8,
                            StandardOpenOption.CREATE,
                            StandardOpenOption.APPEND);
            line("# " + commandLine);
        }

        void drain(Process process) {
            drainers.add(start(process.getInputStream(), "out", true));
            drainers.add(start(process.getErrorStream(), "err", false));
            // Both streams ended: the process is gone; a waiting start() must hear it now.
            Thread watcher =
                    new Thread(
                            () -> {
                                for (Thread drainer : drainers) {
                                    joinUninterruptibly(drainer);
                                }
                                listening.completeExceptionally(
                                        new IllegalStateException("kv-server exited"));
                                closeLog();
                            },
                            "kv-server-output-watcher");
            watcher.setDaemon(true);
            watcher.start();
        }

        private Thread start(InputStream stream, String name, boolean watchForListening) {
            Thread thread =
                    new Thread(
                            () -> {
                                try (BufferedReader reader =
                                        new BufferedReader(
                                                new InputStreamReader(
                                                        stream, StandardCharsets.UTF_8))) {
                                    String text;
                                    while ((text = reader.readLine()) != null) {
                                        line(text);
                                        if (watchForListening
                                                && !listening.isDone()
                                                && LISTENING.matcher(text).matches()) {
                                            listening.complete(text.trim());
                                        }
                                    }
                                } catch (IOException streamClosed) {
                                    // The process is gone; what was read is in the log.
                                }
                            },
                            "kv-server-" + name + "-drainer");
            thread.setDaemon(true);
            thread.start();
            return thread;
        }

        CompletableFuture<String> listening() {
            return listening;
        }

        synchronized void line(String text) {
            tail.addLast(text);
            if (tail.size() > TAIL_LINES) {
                tail.removeFirst();
            }
            try {
                log.write(text);
                log.write('\n');
                log.flush();
            } catch (IOException e) {
                // The tail still holds it; a full disk must not fail the test here.
            }
        }

        synchronized String tail() {
            return String.join("\n", tail);
        }

        void awaitDrained() {
            for (Thread drainer : drainers) {
                try {
                    drainer.join(TimeUnit.SECONDS.toMillis(10));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }

        private static void joinUninterruptibly(Thread thread) {
            while (true) {
                try {
                    thread.join();
                    return;
                } catch (InterruptedException e) {
                    // A daemon watcher has nothing better to do than wait.
                }
            }
        }

        private synchronized void closeLog() {
            try {
                log.close();
            } catch (IOException e) {
                // Nothing left to write.
            }
        }
    }
}
