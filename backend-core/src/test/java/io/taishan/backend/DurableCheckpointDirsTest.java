package io.taishan.backend;

import static io.taishan.backend.DurableBackends.deleteRecursively;
import static io.taishan.backend.DurableBackends.keyed;
import static io.taishan.backend.DurableBackends.placeholders;
import static io.taishan.backend.DurableBackends.registered;
import static io.taishan.backend.DurableBackends.state;
import static io.taishan.backend.DurableBackends.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.PermissionDeniedException;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistryImpl;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.util.ExceptionUtils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Durable checkpoints through a token with a checkpoint directory ({@code checkpoints=} in the
 * kv-server's token file), with the paths exactly as the backend takes them from Flink's {@code
 * FsCheckpointStorageLocation}: a job checkpoints into its team's directory, reuses the confirmed
 * checkpoint's copies and restores from them after the node lost its disk; a job whose token names
 * another team's directory fails its checkpoint with PERMISSION_DENIED, nothing written there.
 */
class DurableCheckpointDirsTest {
    private static final String TEAM_A = "team-a-0123456789abcdef012345678";
    private static final String TEAM_B = "team-b-0123456789abcdef012345678";

    private static MockEnvironment env;

    @TempDir Path dir;
    private Path tokens;
    private EmbeddedKvServer server;
    private JobID job;
    private CheckpointStorageAccess storageOfA;
    private final List<TaishanKeyedStateBackend<String>> backends = new ArrayList<>();

    @BeforeAll
    static void environment() {
        env = MockEnvironment.builder().build();
    }

    @AfterAll
    static void closeEnvironment() throws Exception {
        env.close();
    }

    @BeforeEach
    void start() throws Exception {
        tokens =
                Files.writeString(
                        dir.resolve("tokens"),
                        TEAM_A
                                + " team_a_ team-a checkpoints="
                                + dir.resolve("team-a").toUri()
                                + "\n"
                                + TEAM_B
                                + " team_b_ team-b checkpoints="
                                + dir.resolve("team-b").toUri()
                                + "\n");
        server = startServer(0);
        job = new JobID();
        storageOfA =
                new FileSystemCheckpointStorage(dir.resolve("team-a").toUri())
                        .createCheckpointStorage(job);
        storageOfA.initializeBaseLocationsForCheckpoint();
    }

    @AfterEach
    void stop() {
        backends.forEach(TaishanKeyedStateBackend::dispose);
        server.close();
    }

    @Test
    void aJobCheckpointsIntoItsTeamsDirectoryAndRestoresFromIt() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(TEAM_A, "team_a", List.of());
        write(backend, 0, 200, 0);
        SharedStateRegistryImpl registry = new SharedStateRegistryImpl();
        registered(registry, snapshot(backend, 1), 1);
        backend.notifyCheckpointComplete(1);
        write(backend, 1_000, 10, 0);
        KeyedStateHandle second = snapshot(backend, 2);
        // The copies of checkpoint 1 went out as reusable paths, and were accepted.
        assertThat(placeholders((IncrementalRemoteKeyedStateHandle) second)).isNotEmpty();
        registered(registry, second, 2);

        int port = server.port();
        backend.dispose();
        server.close();
        deleteRecursively(dir.resolve("kv-data"));
        server = startServer(port);

        TaishanKeyedStateBackend<String> rebuilt = create(TEAM_A, "team_a", List.of(second));
        assertThat(rebuilt.backendMetrics().restoreDownloadedBytes()).isPositive();
        for (int i = 0; i < 200; i++) {
            rebuilt.setCurrentKey("k" + i);
            assertThat(state(rebuilt).value()).as("k" + i).isEqualTo(i);
        }
    }

    @Test
    void aJobWhoseCheckpointsGoIntoAnotherTeamsDirectoryFailsItsCheckpoint() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(TEAM_B, "team_b", List.of());
        write(backend, 0, 50, 0);
        assertThatThrownBy(() -> snapshot(backend, 1))
                .satisfies(
                        e ->
                                assertThat(
                                                ExceptionUtils.findThrowable(
                                                                e, PermissionDeniedException.class)
                                                        .orElseThrow()
                                                        .getMessage())
                                        .contains("'team-b'", "does not cover path")
                                        .doesNotContain(TEAM_B));
        try (Stream<Path> files = Files.walk(dir.resolve("team-a"))) {
            assertThat(files.filter(Files::isRegularFile).toList()).isEmpty();
        }
    }

    // ---- helpers, as DurableCheckpointTest's

    private EmbeddedKvServer startServer(int port) {
        Properties durable = new Properties();
        durable.setProperty("durable.enabled", "true");
        return EmbeddedKvServer.start(
                KvServerConfig.builder()
                        .port(port)
                        .dataDir(dir.resolve("kv-data"))
                        .properties(durable)
                        .authTokenFile(tokens)
                        .build());
    }

    private TaishanKeyedStateBackend<String> create(
            String token, String tablePrefix, Collection<KeyedStateHandle> handles)
            throws Exception {
        Configuration config = new Configuration();
        config.set(TaishanOptions.KV_TOKEN, token);
        TaishanStateBackend backend =
                new TaishanStateBackend()
                        .setKvAddress(server.address())
                        .setTablePrefix(tablePrefix)
                        .setDurableCheckpoints(true)
                        .configure(config, getClass().getClassLoader());
        TaishanKeyedStateBackend<String> keyed = keyed(backend, env, job, handles);
        backends.add(keyed);
        return keyed;
    }

    private KeyedStateHandle snapshot(TaishanKeyedStateBackend<String> backend, long checkpointId)
            throws Exception {
        return DurableBackends.snapshot(
                backend,
                checkpointId,
                storageOfA.initializeLocationForCheckpoint(checkpointId),
                CheckpointType.CHECKPOINT);
    }
}
