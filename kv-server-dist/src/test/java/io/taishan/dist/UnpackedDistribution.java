package io.taishan.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The archive {@code package} built, unpacked with {@code tar} as a user unpacks it (so the
 * scripts' modes are the archive's), and commands run from it with bounded waits.
 */
final class UnpackedDistribution {
    private final Path home;

    private UnpackedDistribution(Path home) {
        this.home = home;
    }

    /** Unpacks the archive named by the system property {@code taishan.dist.archive} into dir. */
    static UnpackedDistribution unpack(Path dir) throws IOException, InterruptedException {
        Path archive = Path.of(System.getProperty("taishan.dist.archive"));
        assertThat(archive)
                .as("the distribution archive (built by mvn package in kv-server-dist)")
                .isRegularFile();
        Result tar =
                run(
                        List.of("tar", "-xzf", archive.toString(), "-C", dir.toString()),
                        dir,
                        Map.of(),
                        Duration.ofSeconds(60));
        assertThat(tar.exit()).as("tar: %s", tar.output()).isZero();
        Path home = dir.resolve(System.getProperty("taishan.dist.name"));
        assertThat(home).as("the archive's top directory").isDirectory();
        return new UnpackedDistribution(home);
    }

    Path home() {
        return home;
    }

    Path resolve(String relative) {
        return home.resolve(relative);
    }

    /** What a finished command printed (stdout and stderr together) and its exit code. */
    record Result(int exit, String output) {}

    /**
     * Runs the command in dir with the environment changed as given (a null value removes the
     * variable), waiting at most timeout; the process is killed if it takes longer.
     */
    static Result run(List<String> command, Path dir, Map<String, String> env, Duration timeout)
            throws IOException, InterruptedException {
        Path out = Files.createTempFile("taishan-dist-command", ".out");
        try {
            ProcessBuilder builder =
                    new ProcessBuilder(command)
                            .directory(dir.toFile())
                            .redirectErrorStream(true)
                            .redirectOutput(out.toFile());
            applyEnvironment(builder, env);
            Process p = builder.start();
            p.getOutputStream().close();
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError(
                        command
                                + " did not finish within "
                                + timeout
                                + ": "
                                + Files.readString(out, StandardCharsets.UTF_8));
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
        }
    }

    static void applyEnvironment(ProcessBuilder builder, Map<String, String> env) {
        for (Map.Entry<String, String> e : env.entrySet()) {
            if (e.getValue() == null) {
                builder.environment().remove(e.getKey());
            } else {
                builder.environment().put(e.getKey(), e.getValue());
            }
        }
    }

    /** This JVM's java: for JAVA_HOME, or for a PATH that has java and little else. */
    static Path javaHome() {
        return Path.of(System.getProperty("java.home"));
    }

    /** A PATH with this JVM's bin/ first and the system's tools (tar, dirname, ...). */
    static String pathWithJava() {
        List<String> dirs = new ArrayList<>();
        dirs.add(javaHome().resolve("bin").toString());
        dirs.add("/usr/local/bin");
        dirs.add("/usr/bin");
        dirs.add("/bin");
        return String.join(":", dirs);
    }

    /** A PATH without any java on it. */
    static String pathWithoutJava() {
        return "/usr/bin:/bin";
    }
}
