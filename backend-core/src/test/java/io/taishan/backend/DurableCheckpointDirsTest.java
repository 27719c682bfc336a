package io.taishan.backend;

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
import java.util.concurrent.RunnableFuture;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistryImpl;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
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
    private static final int KEY_GROUPS = 8;
    private static final KeyGroupRange ALL = KeyGroupRange.of(0, KEY_GROUPS - 1);
    private static final String OPERATOR = "StreamMap_0a448493b4782967b150582570326227_(1/1)";
    private static final ValueStateDescriptor<Integer> COUNT =
            new ValueStateDescriptor<>("count", IntSerializer.INSTANCE);

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
        assertThat(placeholders(second)).isNotEmpty();
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
        TaishanKeyedStateBackend<String> keyed =
                (TaishanKeyedStateBackend<String>)
                        backend.createKeyedStateBackend(
                                new KeyedStateBackendParametersImpl<>(
                                        env,
                                        job,
                                        OPERATOR,
                                        StringSerializer.INSTANCE,
                                        KEY_GROUPS,
                                        ALL,
                                        env.getTaskKvStateRegistry(),
                                        TtlTimeProvider.DEFAULT,
                                        new UnregisteredMetricsGroup(),
                                        handles,
                                        new CloseableRegistry()));
        backends.add(keyed);
        return keyed;
    }

    private KeyedStateHandle snapshot(TaishanKeyedStateBackend<String> backend, long checkpointId)
            throws Exception {
        CheckpointStreamFactory location = storageOfA.initializeLocationForCheckpoint(checkpointId);
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future =
                backend.snapshot(
                        checkpointId,
                        checkpointId,
                        location,
                        new CheckpointOptions(
                                CheckpointType.CHECKPOINT,
                                CheckpointStorageLocationReference.getDefault()));
        future.run();
        return future.get().getJobManagerOwnedSnapshot();
    }

    private static void registered(
            SharedStateRegistryImpl registry, KeyedStateHandle handle, long checkpointId) {
        handle.registerSharedStates(registry, checkpointId);
        registry.checkpointCompleted(checkpointId);
    }

    private static List<PlaceholderStreamStateHandle> placeholders(KeyedStateHandle handle) {
        List<PlaceholderStreamStateHandle> found = new ArrayList<>();
        for (HandleAndLocalPath copy :
                ((IncrementalRemoteKeyedStateHandle) handle).getSharedState()) {
            if (copy.getHandle() instanceof PlaceholderStreamStateHandle placeholder) {
                found.add(placeholder);
            }
        }
        return found;
    }

    private static void write(
            TaishanKeyedStateBackend<String> backend, int from, int count, int offset)
            throws Exception {
        for (int i = from; i < from + count; i++) {
            backend.setCurrentKey("k" + i);
            state(backend).update(i + offset);
        }
    }

    private static ValueState<Integer> state(TaishanKeyedStateBackend<String> backend)
            throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, COUNT);
    }

    private static void deleteRecursively(Path root) throws Exception {
        try (var paths = Files.walk(root)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
