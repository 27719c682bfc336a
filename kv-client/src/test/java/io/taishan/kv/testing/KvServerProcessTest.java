package io.taishan.kv.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.KvUnavailableException;
import io.taishan.kv.client.ScriptedKvServerMain;
import io.taishan.kv.client.ShardLease;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fixture's process handling, with {@link ScriptedKvServerMain} standing in for the real server
 * (kv-client must not depend on kv-server; the server's own tests run the real one).
 */
class KvServerProcessTest {
    private static final Duration STARTUP = Duration.ofSeconds(60);

    @TempDir Path temp;

    private KvServerProcess startScripted(Path dataDir, String... args) {
        return KvServerProcess.start(
                System.getProperty("java.class.path"),
                ScriptedKvServerMain.class.getName(),
                dataDir,
                STARTUP,
                args);
    }

    private static KvStore connect(KvServerProcess server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(5))
                        .maxAttempts(2)
                        .backoff(Duration.ofMillis(5), Duration.ofMillis(20))
                        .build());
    }

    @Test
    void startsTheServerAndStopsItGracefully() throws Exception {
        Path dataDir = temp.resolve("data");
        KvServerProcess server = startScripted(dataDir);
        int exit = -2;
        try {
            assertThat(server.isAlive()).isTrue();
            assertThat(server.port()).isPositive();
            assertThat(server.address()).isEqualTo("127.0.0.1:" + server.port());
            assertThat(Files.isDirectory(dataDir)).isTrue();
            try (KvStore store = connect(server)) {
                store.createTable("t", 2);
                assertThat(store.openShard("t", 1).epoch()).isEqualTo(1);
            }
        } finally {
            exit = server.stop();
        }

        assertThat(exit).isEqualTo(143);
        assertThat(server.isAlive()).isFalse();
        assertThat(server.logFile()).isEqualTo(temp.resolve("data.log"));
        String log = Files.readString(server.logFile());
        assertThat(log)
                .contains("--data-dir " + dataDir.toAbsolutePath())
                .contains("--host 127.0.0.1")
                .contains("LISTENING " + server.address())
                // SIGTERM ran the child's shutdown hooks: a graceful stop.
                .contains("scripted server stopped");
        assertThat(server.recentOutput()).contains("scripted server stopped");
    }

    @Test
    void killLeavesClientsWithAnUnavailableErrorNamingTheAddress() {
        KvServerProcess server = startScripted(temp.resolve("data"));
        try (KvStore store = connect(server)) {
            store.createTable("t", 1);
            ShardLease lease = store.openShard("t", 0);

            server.kill();

            assertThat(server.isAlive()).isFalse();
            assertThat(server.recentOutput()).doesNotContain("scripted server stopped");
            assertThatThrownBy(() -> store.get(lease, new byte[] {1}))
                    .isInstanceOf(KvUnavailableException.class)
                    .hasMessageContaining(server.address());
            assertThatThrownBy(server::checkAlive)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("died");
        } finally {
            server.stop();
        }
    }

    @Test
    void aServerThatDiesWhileStartingFailsWithItsLastLines() {
        assertThatThrownBy(() -> startScripted(temp.resolve("data"), "--fail-with", "3"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("exited with code 3")
                .hasMessageContaining("scripted server starting")
                .hasMessageContaining("data dir not writable")
                .hasMessageContaining(temp.resolve("data.log").toString());
    }

    @Test
    void withoutTheServerOnTheClasspathItSaysWhatToSet() {
        assumeThat(System.getProperty(KvServerProcess.CLASSPATH_PROPERTY)).isNull();
        assumeThat(System.getProperty(KvServerProcess.JAR_PROPERTY)).isNull();

        assertThatThrownBy(() -> KvServerProcess.start(temp.resolve("data")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("-D" + KvServerProcess.JAR_PROPERTY)
                .hasMessageContaining("-D" + KvServerProcess.CLASSPATH_PROPERTY)
                .hasMessageContaining("mvn -pl kv-server package");
    }
}
