package io.taishan.testkit;

import io.taishan.backend.TaishanStateBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.ImageFromDockerfile;
import org.testcontainers.utility.DockerImageName;

/**
 * A kv-server node in a Docker container, for integration tests that want the server outside the
 * test's JVM (a Flink test classpath with Flink's RocksDB, a server to stop or restart, the image
 * an operator runs). The image is the distribution's {@code Dockerfile}: built by {@code docker
 * build} from an unpacked {@code taishan-kv-server-<version>-bin.tar.gz} and named here, or built
 * by Testcontainers from such a directory with {@link #fromDistribution(Path)}.
 *
 * <pre>{@code
 * @Container
 * static final TaishanKvServerContainer KV = new TaishanKvServerContainer("taishan-kv-server:0.1.0");
 * ...
 * env.setStateBackend(new TaishanStateBackend().setKvAddress(KV.getAddress()));
 * }</pre>
 *
 * <p>The container is ready once the server printed its {@code LISTENING} line. It serves a single
 * node (no {@code cluster.nodes}), so a client needs only the mapped address: a single node is
 * reached by the address it was given. Needs {@code org.testcontainers:testcontainers} on the test
 * classpath (an optional dependency of this artifact).
 */
public class TaishanKvServerContainer extends GenericContainer<TaishanKvServerContainer> {
    /** The port the image's server listens on inside the container. */
    public static final int KV_PORT = 7600;

    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(90);

    /** An image built from the distribution's Dockerfile, e.g. {@code taishan-kv-server:0.1.0}. */
    public TaishanKvServerContainer(String image) {
        this(DockerImageName.parse(image));
    }

    public TaishanKvServerContainer(DockerImageName image) {
        super(image);
        exposePortAndAwaitListening();
    }

    private TaishanKvServerContainer(ImageFromDockerfile image) {
        super(image);
        exposePortAndAwaitListening();
    }

    /**
     * Builds the image from an unpacked distribution (the directory holding its {@code Dockerfile},
     * {@code bin/}, {@code conf/} and {@code lib/}); Testcontainers deletes it when the JVM ends.
     */
    public static TaishanKvServerContainer fromDistribution(Path distributionDir) {
        if (!Files.isRegularFile(distributionDir.resolve("Dockerfile"))) {
            throw new IllegalArgumentException(
                    distributionDir
                            + " has no Dockerfile: give the directory that"
                            + " taishan-kv-server-<version>-bin.tar.gz unpacks to");
        }
        return new TaishanKvServerContainer(
                new ImageFromDockerfile("taishan-kv-server-test", true)
                        .withFileFromPath(".", distributionDir));
    }

    private void exposePortAndAwaitListening() {
        withExposedPorts(KV_PORT);
        waitingFor(
                Wait.forLogMessage(".*LISTENING \\S+:" + KV_PORT + "\\s*", 1)
                        .withStartupTimeout(STARTUP_TIMEOUT));
    }

    /** {@code host:port} of the server as this JVM reaches it, for {@code taishan.kv.address}. */
    public String getAddress() {
        return getHost() + ":" + getMappedPort(KV_PORT);
    }

    /** A new backend on this server, with the other options at their defaults. */
    public TaishanStateBackend stateBackend() {
        return new TaishanStateBackend().setKvAddress(getAddress());
    }
}
