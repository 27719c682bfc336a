package io.taishan.it.harness;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.apache.flink.client.cli.CliFrontend;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.minicluster.MiniCluster;

/**
 * Flink's command line ({@code bin/flink}, {@link CliFrontend}) in this JVM, talking to the
 * MiniCluster's REST endpoint as a user's {@code flink} talks to a session cluster: {@code flink
 * <action> -m <host:port> <arguments>}. The configuration stands for the user's {@code
 * config.yaml}. Failures are Flink's own exceptions, not an exit code.
 */
public final class FlinkCli {
    private final Configuration flinkConf;
    private final Path confDir;
    private final String jobManager;

    public FlinkCli(MiniCluster cluster, Configuration flinkConf, Path confDir) throws Exception {
        this.flinkConf = new Configuration(flinkConf);
        this.confDir = Files.createDirectories(confDir);
        URI rest = cluster.getRestAddress().get();
        this.jobManager = rest.getHost() + ":" + rest.getPort();
    }

    /** {@code host:port} of the REST endpoint, what {@code -m} names. */
    public String jobManager() {
        return jobManager;
    }

    /**
     * Runs {@code flink <action> -m <jobManager> <arguments>}; for {@code run} with {@code -d} it
     * returns once the job is submitted, for {@code stop} and {@code savepoint} once the savepoint
     * is complete.
     */
    public void exec(String action, String... arguments) throws Exception {
        List<String> args = new ArrayList<>(List.of("-m", jobManager));
        args.addAll(Arrays.asList(arguments));
        String[] params = args.toArray(String[]::new);
        Frontend flink =
                new Frontend(
                        flinkConf,
                        CliFrontend.loadCustomCommandLines(flinkConf, confDir.toString()));
        switch (action) {
            case "run" -> flink.run(params);
            case "stop" -> flink.stop(params);
            case "savepoint" -> flink.savepoint(params);
            case "cancel" -> flink.cancel(params);
            default -> throw new IllegalArgumentException("no such action in this test: " + action);
        }
    }

    /**
     * A job jar with no classes: {@code flink run} needs one, and Flink's class loader then finds
     * every class of the job on this JVM's class path, so the job reports to this test.
     */
    public static Path emptyJobJar(Path dir) throws Exception {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        Path jar = Files.createDirectories(dir).resolve("job.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), manifest)) {
            out.flush();
        }
        return jar;
    }

    /** Opens the actions that {@code CliFrontend#parseAndRun} would run and report as exit 1. */
    private static final class Frontend extends CliFrontend {
        Frontend(
                Configuration configuration,
                List<org.apache.flink.client.cli.CustomCommandLine> lines) {
            super(configuration, lines);
        }

        @Override
        protected void run(String[] args) throws Exception {
            super.run(args);
        }

        @Override
        protected void stop(String[] args) throws Exception {
            super.stop(args);
        }

        @Override
        protected void savepoint(String[] args) throws Exception {
            super.savepoint(args);
        }

        @Override
        protected void cancel(String[] args) throws Exception {
            super.cancel(args);
        }
    }
}
