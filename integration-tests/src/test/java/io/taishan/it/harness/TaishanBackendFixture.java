package io.taishan.it.harness;

import io.taishan.kv.testing.KvServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;

/**
 * The Taishan backend on a real kv-server. The server runs as a child JVM ({@link KvServerProcess},
 * the runnable jar named by {@code -Dtaishan.kvserver.jar}), because Flink's test utilities put
 * {@code frocksdbjni} in this JVM and the server needs {@code rocksdbjni}. The job sees nothing but
 * configuration: the factory's class name and the server's address.
 */
public final class TaishanBackendFixture implements BackendFixture {
    public static final String FACTORY_CLASS = "io.taishan.backend.TaishanStateBackendFactory";
    public static final String KEYED_BACKEND_CLASS = "io.taishan.backend.TaishanKeyedStateBackend";
    public static final String ADDRESS_KEY = "taishan.kv.address";

    public static final String DURABLE_KEY = "taishan.checkpoint.durable";

    private final Path dataDir;
    private final String[] serverArgs;
    private final Configuration jobConfig;
    private KvServerProcess server;

    private TaishanBackendFixture(Path dataDir, String[] serverArgs, Configuration jobConfig) {
        this.dataDir = dataDir;
        this.serverArgs = serverArgs;
        this.jobConfig = jobConfig;
        this.server = KvServerProcess.start(dataDir, serverArgs);
    }

    /** A test parameter: one kv-server per test, its data under the test's directory. */
    public static BackendUnderTest backend() {
        return new BackendUnderTest("taishan", TaishanBackendFixture::start);
    }

    public static TaishanBackendFixture start(Path workDir) {
        return start(workDir, new String[0]);
    }

    /** With extra kv-server command-line arguments ({@code --config file}, ...). */
    public static TaishanBackendFixture start(Path workDir, String... serverArgs) {
        return new TaishanBackendFixture(
                workDir.resolve("kv-data"), serverArgs, new Configuration());
    }

    /**
     * Durable checkpoints: the kv-server with {@code durable.enabled} (its Flink file systems from
     * its own classpath: {@code file://} here), the jobs with {@code taishan.checkpoint.durable}.
     */
    public static TaishanBackendFixture startDurable(Path workDir) throws IOException {
        return startDurable(workDir, "");
    }

    /**
     * As {@link #startDurable(Path)}, with more lines for the kv-server's config file ({@code
     * durable.plugins-dir}, {@code durable.flink.<flink key>}, ...).
     */
    public static TaishanBackendFixture startDurable(Path workDir, String serverProperties)
            throws IOException {
        Files.createDirectories(workDir);
        Path serverConfig =
                Files.writeString(
                        workDir.resolve("durable-server.properties"),
                        "durable.enabled = true\n" + serverProperties);
        Configuration jobConfig = new Configuration();
        jobConfig.setString(DURABLE_KEY, "true");
        return new TaishanBackendFixture(
                workDir.resolve("kv-data"),
                new String[] {"--config", serverConfig.toString()},
                jobConfig);
    }

    /** A test parameter: a kv-server with durable checkpoints on, one per test. */
    public static BackendUnderTest durableBackend() {
        return new BackendUnderTest("taishan-durable", TaishanBackendFixture::startDurable);
    }

    /**
     * Kills the kv-server with SIGKILL and starts it again on the same port and data dir, as a
     * supervisor restarting a crashed server would; returns once it serves again.
     */
    public void crashAndRestartServer() {
        int port = server.port();
        server.kill();
        restartOn(port);
    }

    /**
     * Kills the kv-server with SIGKILL, deletes its data directory as a lost disk would, and starts
     * an empty node in its place: the same port and node name, nothing on its disk.
     */
    public void loseServerAndStartAnEmptyOne() throws IOException {
        int port = server.port();
        server.kill();
        try (Stream<Path> paths = Files.walk(dataDir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
        restartOn(port);
    }

    private void restartOn(int port) {
        String[] args = Arrays.copyOf(serverArgs, serverArgs.length + 2);
        args[serverArgs.length] = "--port";
        args[serverArgs.length + 1] = Integer.toString(port);
        server = KvServerProcess.start(dataDir, args);
    }

    @Override
    public Configuration configuration() {
        server.checkAlive();
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, FACTORY_CLASS);
        config.setString(ADDRESS_KEY, server.address());
        config.addAll(jobConfig);
        return config;
    }

    @Override
    public String keyedBackendClassName() {
        return KEYED_BACKEND_CLASS;
    }

    /** Its restores clone or roll back remote shard snapshots; only a canonical savepoint loads. */
    @Override
    public boolean restoresByMetadata() {
        return true;
    }

    /** The server process's id, to signal it (SIGSTOP to hang it). */
    public long serverPid() {
        return server.pid();
    }

    /** The server's data directory, for a soak's disk-use curve. */
    public Path dataDir() {
        return dataDir;
    }

    /** Where the server's stdout and stderr go, to keep it after a long run. */
    public Path serverLogFile() {
        return server.logFile();
    }

    /** The server's own account of what happened, for failure messages. */
    public String serverOutput() {
        return server.recentOutput();
    }

    @Override
    public void close() {
        server.close();
    }
}
