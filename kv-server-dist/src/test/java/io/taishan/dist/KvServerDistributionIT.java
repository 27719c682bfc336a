package io.taishan.dist;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.dist.UnpackedDistribution.Result;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The quick start, as a user runs it: the built {@code taishan-kv-server-<version>-bin.tar.gz}
 * unpacked into a fresh directory, {@code bin/taishan-kv-server --config
 * conf/taishan-kv-server.properties} started from there as a real process (only the port changed to
 * a free one), a table written and read through the client, {@code bin/taishan-kv-admin health}
 * from another directory through a symbolic link with java only on the PATH, {@code gc} with and
 * without FLINK_HOME, the log file under {@code log/}, and SIGTERM ending it cleanly.
 */
class KvServerDistributionIT {
    private static final Duration STARTUP = Duration.ofSeconds(60);
    private static final Duration COMMAND = Duration.ofSeconds(60);
    private static final Pattern LISTENING = Pattern.compile("^LISTENING (\\S+):(\\d+)$");

    @TempDir Path temp;

    @Test
    void quickStartFromTheUnpackedArchive() throws Exception {
        UnpackedDistribution dist = UnpackedDistribution.unpack(temp);
        Path home = dist.home();
        checkLayout(dist);

        ProcessBuilder builder =
                new ProcessBuilder(
                                "bin/taishan-kv-server",
                                "--config",
                                "conf/taishan-kv-server.properties",
                                "--port",
                                "0")
                        .directory(home.toFile())
                        .redirectError(temp.resolve("server.stderr").toFile());
        UnpackedDistribution.applyEnvironment(
                builder,
                env(
                        "JAVA_HOME",
                        UnpackedDistribution.javaHome().toString(),
                        "TAISHAN_KV_SERVER_OPTS",
                        "-Xmx256m -XX:+UseSerialGC -Dtaishan.dist.test=opts-applied"));
        Process server = builder.start();
        try {
            BufferedReader stdout =
                    new BufferedReader(
                            new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String listening = firstLine(stdout, server);
            Matcher m = LISTENING.matcher(listening);
            assertThat(m.matches()).as("the first stdout line: %s", listening).isTrue();
            String address = "127.0.0.1:" + m.group(2);
            assertThat(m.group(1)).isEqualTo("127.0.0.1"); // host from the config file

            // The script exec'd the JVM: the process started is the server, with the options.
            assertThat(server.toHandle().info().command().orElse(""))
                    .endsWith(Path.of("bin", "java").toString());
            assertThat(server.toHandle().info().arguments().orElse(new String[0]))
                    .contains("-Xmx256m", "-Dtaishan.dist.test=opts-applied");

            writeAndRead(address);

            // From another directory, through a symbolic link (as from /usr/local/bin), JAVA_HOME
            // unset, java only on the PATH.
            Path elsewhere = Files.createDirectories(temp.resolve("elsewhere"));
            Path link =
                    Files.createSymbolicLink(
                            elsewhere.resolve("kv-admin"),
                            elsewhere.relativize(home.resolve("bin/taishan-kv-admin")));
            Result health =
                    UnpackedDistribution.run(
                            List.of(link.toString(), "--address", address, "health"),
                            elsewhere,
                            env("JAVA_HOME", null, "PATH", UnpackedDistribution.pathWithJava()),
                            COMMAND);
            assertThat(health.exit()).as(health.output()).isZero();
            assertThat(health.output()).contains(address).contains("SERVING");
            assertThat(health.output().lines().filter(l -> l.contains("SERVING")))
                    .singleElement()
                    .satisfies(row -> assertThat(row.split("\\s+")).contains("1")); // 1 table

            checkCheckpointReader(dist, address, elsewhere);

            Path log = home.resolve("log/taishan-kv-server.log");
            assertThat(log).isRegularFile();
            assertThat(Files.readString(log)).contains("listening on " + address);

            // SIGTERM, as kill, systemd and docker stop send it (Process.destroy would also close
            // the streams this test still reads).
            assertThat(server.toHandle().destroy()).isTrue();
            assertThat(server.waitFor(30, TimeUnit.SECONDS)).as("stopped within 30 s").isTrue();
            assertThat(server.exitValue()).isEqualTo(143);
            assertThat(stdout.readLine()).as("nothing on stdout after LISTENING").isNull();
        } finally {
            server.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }

        // A clean stop: the graceful shutdown ran to its end and recorded it.
        String log = Files.readString(home.resolve("log/taishan-kv-server.log"));
        assertThat(log).contains("shutting down").contains("stopped");
        assertThat(Files.readString(home.resolve("data/server-run"))).contains("state=stopped");
        assertThat(Files.readString(temp.resolve("server.stderr")))
                .as("nothing below WARN on stderr")
                .doesNotContain(" INFO ");
    }

    @Test
    void withoutJavaTheScriptsSaySoInOneLine() throws Exception {
        UnpackedDistribution dist = UnpackedDistribution.unpack(temp);
        // Only what the scripts need besides java.
        Path tools = Files.createDirectories(temp.resolve("tools"));
        for (String tool : List.of("bash", "dirname", "readlink", "mkdir", "basename")) {
            Files.createSymbolicLink(tools.resolve(tool), Path.of("/bin", tool));
        }
        for (String script : List.of("taishan-kv-server", "taishan-kv-admin")) {
            Result r =
                    UnpackedDistribution.run(
                            List.of(dist.resolve("bin/" + script).toString(), "--help"),
                            temp,
                            env("JAVA_HOME", null, "PATH", tools.toString()),
                            COMMAND);
            assertThat(r.exit()).isEqualTo(1);
            assertThat(r.output().strip())
                    .isEqualTo(
                            script
                                    + ": no Java found: set JAVA_HOME or put java (17 or newer)"
                                    + " on the PATH");
        }
    }

    private static void checkLayout(UnpackedDistribution dist) throws IOException {
        for (String script : List.of("bin/taishan-kv-server", "bin/taishan-kv-admin")) {
            assertThat(Files.getPosixFilePermissions(dist.resolve(script)))
                    .contains(
                            PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OTHERS_EXECUTE);
        }
        for (String file :
                List.of(
                        "conf/taishan-kv-server.properties",
                        "conf/log4j2.xml",
                        "conf/log4j2-console.xml",
                        "conf/taishan-kv-server.service",
                        "Dockerfile",
                        "README.md")) {
            assertThat(dist.resolve(file)).isRegularFile();
        }
        List<String> lib = fileNames(dist.resolve("lib"));
        assertThat(lib)
                .anyMatch(n -> n.matches("taishan-kv-server-.*\\.jar"))
                .anyMatch(n -> n.matches("taishan-kv-client-.*\\.jar"))
                .anyMatch(n -> n.matches("rocksdbjni-.*\\.jar"))
                .anyMatch(n -> n.matches("log4j-core-.*\\.jar"))
                // Of Flink only its core, for the durable package's FileSystem: never its RocksDB
                // backend (frocksdbjni would clash with rocksdbjni) nor its runtime; no test jars.
                .anyMatch(n -> n.matches("flink-core-.*\\.jar"))
                .noneMatch(
                        n ->
                                n.contains("frocksdb")
                                        || n.startsWith("flink-statebackend")
                                        || n.startsWith("flink-runtime")
                                        || n.startsWith("flink-streaming"))
                .noneMatch(n -> n.contains("junit") || n.contains("testcontainers"));
        assertThat(fileNames(dist.resolve("lib/checkpoint-reader")))
                .singleElement()
                .satisfies(n -> assertThat(n).matches("taishan-snapshot-.*\\.jar"));
    }

    private static void writeAndRead(String address) {
        try (KvStore kv =
                KvStores.connect(
                        KvClientConfig.forAddresses(address)
                                .requestTimeout(Duration.ofSeconds(10))
                                .build())) {
            kv.createTable("dist_check", 2);
            ShardLease lease = kv.openShard("dist_check", 1);
            byte[] key = "k".getBytes(StandardCharsets.UTF_8);
            byte[] value = "from the distribution".getBytes(StandardCharsets.UTF_8);
            kv.write(new WriteBatch("dist_check").put(lease, key, value));
            assertThat(kv.get(lease, key)).isEqualTo(value);
        }
    }

    /**
     * {@code gc --keep} reads checkpoints with Flink from FLINK_HOME: without it the admin says so;
     * with one (Flink 1.20.3's jars, as its lib/ has them) the reader runs and names a path that is
     * no checkpoint. A dry run: nothing would be dropped anyway.
     */
    private static void checkCheckpointReader(
            UnpackedDistribution dist, String address, Path elsewhere) throws Exception {
        List<String> gc =
                List.of(
                        dist.resolve("bin/taishan-kv-admin").toString(),
                        "--address",
                        address,
                        "gc",
                        "--table-prefix",
                        "dist_",
                        "--keep",
                        elsewhere.resolve("no-such-checkpoint").toString());
        Result withoutFlink =
                UnpackedDistribution.run(gc, elsewhere, env("FLINK_HOME", null), COMMAND);
        assertThat(withoutFlink.exit()).as(withoutFlink.output()).isEqualTo(1);
        assertThat(withoutFlink.output()).contains("set FLINK_HOME");

        // A Flink distribution's shape: lib/ (here Flink 1.20.3's jars), conf/config.yaml,
        // plugins/.
        Path flinkHome = Files.createDirectories(elsewhere.resolve("flink"));
        Files.createSymbolicLink(
                flinkHome.resolve("lib"), Path.of(System.getProperty("taishan.flink.lib")));
        Files.createDirectories(flinkHome.resolve("plugins"));
        Files.writeString(
                Files.createDirectories(flinkHome.resolve("conf")).resolve("config.yaml"),
                "parallelism.default: 1\n");
        Result withFlink =
                UnpackedDistribution.run(
                        gc, elsewhere, env("FLINK_HOME", flinkHome.toString()), COMMAND);
        assertThat(withFlink.exit()).as(withFlink.output()).isEqualTo(1);
        assertThat(withFlink.output())
                .contains("cannot read the kept checkpoints, so nothing is dropped")
                .contains("no-such-checkpoint");

        Result tables =
                UnpackedDistribution.run(
                        List.of(
                                dist.resolve("bin/taishan-kv-admin").toString(),
                                "--address",
                                address,
                                "tables"),
                        elsewhere,
                        Map.of(),
                        COMMAND);
        assertThat(tables.exit()).as(tables.output()).isZero();
        assertThat(tables.output()).contains("dist_check");
    }

    /** The first line of the server's stdout, within {@link #STARTUP}. */
    private String firstLine(BufferedReader stdout, Process server) throws Exception {
        CompletableFuture<String> line =
                CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                return stdout.readLine();
                            } catch (IOException e) {
                                throw new RuntimeException(e);
                            }
                        });
        try {
            String first = line.get(STARTUP.toMillis(), TimeUnit.MILLISECONDS);
            if (first == null) {
                server.waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError(
                        "the server exited ("
                                + (server.isAlive() ? "still alive" : server.exitValue())
                                + ") without LISTENING: "
                                + Files.readString(temp.resolve("server.stderr")));
            }
            return first;
        } catch (TimeoutException e) {
            throw new AssertionError(
                    "no LISTENING line within "
                            + STARTUP
                            + ": "
                            + Files.readString(temp.resolve("server.stderr")));
        }
    }

    private static List<String> fileNames(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(Files::isRegularFile)
                    .map(p -> p.getFileName().toString())
                    .sorted()
                    .toList();
        }
    }

    /** Name, value pairs; a null value removes the variable. */
    private static Map<String, String> env(String... pairs) {
        Map<String, String> env = new HashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            env.put(pairs[i], pairs[i + 1]);
        }
        return env;
    }
}
