package io.taishan.dist;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One JVM the test started, its stdout and stderr in a file. A JVM shutdown hook kills it if the
 * test JVM ends first (a fork timeout), so no Flink process outlives the build.
 */
final class ChildProcess implements AutoCloseable {
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

    private final String name;
    private final Process process;
    private final Path output;
    private final Thread reaper;

    private ChildProcess(String name, Process process, Path output, Thread reaper) {
        this.name = name;
        this.process = process;
        this.output = output;
        this.reaper = reaper;
    }

    static ChildProcess start(
            String name, List<String> command, Map<String, String> environment, Path output) {
        ProcessBuilder builder =
                new ProcessBuilder(command)
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(output.toFile()))
                        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        builder.environment().putAll(environment);
        Process process;
        try {
            Files.writeString(output, "# " + String.join(" ", command) + "\n");
            process = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start " + name + ": " + command, e);
        }
        Thread reaper = new Thread(() -> process.destroyForcibly(), name + "-reaper");
        Runtime.getRuntime().addShutdownHook(reaper);
        return new ChildProcess(name, process, output, reaper);
    }

    String name() {
        return name;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** Waits for the process to end by itself; false if it is still running after the timeout. */
    boolean waitFor(Duration timeout) throws InterruptedException {
        return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    int exitValue() {
        return process.exitValue();
    }

    /** SIGKILL ({@code kill -9}): the process gets no chance to clean up. */
    void kill() {
        process.destroyForcibly();
        try {
            if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(name + " (pid " + pid() + ") survived SIGKILL");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            removeReaper();
        }
    }

    /** The whole output so far. */
    String output() {
        try {
            return Files.readString(output, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(cannot read " + output + ": " + e + ")";
        }
    }

    /** The last lines of the output, for failure messages. */
    String tail(int lines) {
        List<String> all = output().lines().toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            kill();
        } else {
            removeReaper();
        }
    }

    @Override
    public String toString() {
        return name + "[pid " + process.pid() + ", output " + output + "]";
    }

    private void removeReaper() {
        try {
            Runtime.getRuntime().removeShutdownHook(reaper);
        } catch (IllegalStateException shutdownUnderWay) {
            // The hook is running or about to: it kills what is left.
        }
    }
}
