package io.taishan.backend;

import static io.taishan.backend.DurableBackends.ALL;
import static io.taishan.backend.DurableBackends.deleteRecursively;
import static io.taishan.backend.DurableBackends.keyed;
import static io.taishan.backend.DurableBackends.placeholders;
import static io.taishan.backend.DurableBackends.registered;
import static io.taishan.backend.DurableBackends.snapshot;
import static io.taishan.backend.DurableBackends.state;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import org.apache.flink.api.common.JobID;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistryImpl;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStorageLocation;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Durable checkpoints of one keyed backend against a real kv-server with {@code durable.enabled},
 * into Flink's own file-system checkpoint storage: the handle Flink gets, what it reuses and when,
 * what a savepoint and a full checkpoint hold, and a restore on a node whose disk is gone.
 */
class DurableCheckpointTest {
    private static MockEnvironment env;

    @TempDir Path dir;
    private EmbeddedKvServer server;
    private JobID job;
    private CheckpointStorageAccess storage;
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
        server = startServer(0);
        job = new JobID();
        storage =
                new FileSystemCheckpointStorage(dir.resolve("checkpoints").toUri())
                        .createCheckpointStorage(job);
        storage.initializeBaseLocationsForCheckpoint();
    }

    @AfterEach
    void stop() {
        backends.forEach(TaishanKeyedStateBackend::dispose);
        server.close();
    }

    @Test
    void aCheckpointIsAnIncrementalHandleOnCopiesThatExistWithTheirSizes() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(job, List.of());
        write(backend, 0, 200);

        IncrementalRemoteKeyedStateHandle handle =
                (IncrementalRemoteKeyedStateHandle)
                        snapshot(backend, 1, checkpointLocation(1), CheckpointType.CHECKPOINT);

        assertThat(handle.getKeyGroupRange()).isEqualTo(ALL);
        assertThat(handle.getSharedState()).isNotEmpty();
        for (HandleAndLocalPath copy : handle.getSharedState()) {
            assertThat(copy.getHandle()).isInstanceOf(FileStateHandle.class);
            assertThat(local(copy.getHandle()))
                    .startsWith(
                            dir.resolve("checkpoints").resolve(job.toString()).resolve("shared"))
                    .hasSize(copy.getStateSize());
            assertThat(copy.getLocalPath()).matches("[0-9a-f-]+/.+");
        }
        assertThat(handle.getPrivateState()).isNotEmpty();
        for (HandleAndLocalPath pack : handle.getPrivateState()) {
            assertThat(local(pack.getHandle()))
                    .startsWith(dir.resolve("checkpoints").resolve(job.toString()).resolve("chk-1"))
                    .hasSize(pack.getStateSize());
        }
        long copied =
                handle.getSharedState().stream().mapToLong(HandleAndLocalPath::getStateSize).sum()
                        + handle.getPrivateState().stream()
                                .mapToLong(HandleAndLocalPath::getStateSize)
                                .sum();
        assertThat(handle.getCheckpointedSize())
                .isEqualTo(copied + handle.getMetaDataStateHandle().getStateSize());
    }

    /**
     * Flink's RocksDB rule: the copies of the last confirmed checkpoint are reused (sent as
     * placeholders, which the JobManager's registry resolves), an unconfirmed one's never.
     */
    @Test
    void onlyAConfirmedCheckpointsCopiesAreReused() throws Exception {
        TaishanKeyedStateBackend<String> confirmed = create(job, List.of());
        write(confirmed, 0, 200);
        IncrementalRemoteKeyedStateHandle first =
                durable(snapshot(confirmed, 1, checkpointLocation(1), CheckpointType.CHECKPOINT));
        confirmed.notifyCheckpointComplete(1);
        write(confirmed, 1_000, 10);
        IncrementalRemoteKeyedStateHandle second =
                durable(snapshot(confirmed, 2, checkpointLocation(2), CheckpointType.CHECKPOINT));

        assertThat(placeholders(second)).isNotEmpty();
        assertThat(placeholders(second))
                .allSatisfy(
                        p ->
                                assertThat(physicalIds(first))
                                        .contains(p.getStreamStateHandleID().getKeyString()));
        assertThat(second.getCheckpointedSize()).isLessThan(first.getCheckpointedSize());

        JobID otherJob = new JobID();
        CheckpointStorageAccess otherStorage =
                new FileSystemCheckpointStorage(dir.resolve("other").toUri())
                        .createCheckpointStorage(otherJob);
        otherStorage.initializeBaseLocationsForCheckpoint();
        TaishanKeyedStateBackend<String> unconfirmed = create(otherJob, List.of());
        write(unconfirmed, 0, 200);
        snapshot(
                unconfirmed,
                1,
                otherStorage.initializeLocationForCheckpoint(1),
                CheckpointType.CHECKPOINT);
        write(unconfirmed, 1_000, 10);
        IncrementalRemoteKeyedStateHandle notReused =
                durable(
                        snapshot(
                                unconfirmed,
                                2,
                                otherStorage.initializeLocationForCheckpoint(2),
                                CheckpointType.CHECKPOINT));

        assertThat(placeholders(notReused)).isEmpty();
    }

    /**
     * A native savepoint holds every copy in its own directory and reuses nothing, even after a
     * confirmed checkpoint; a full checkpoint (first after a NO_CLAIM restore) reuses nothing.
     */
    @Test
    void savepointsAndFullCheckpointsReuseNothing() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(job, List.of());
        write(backend, 0, 100);
        durable(snapshot(backend, 1, checkpointLocation(1), CheckpointType.CHECKPOINT));
        backend.notifyCheckpointComplete(1);

        Path savepointDir = dir.resolve("savepoints");
        IncrementalRemoteKeyedStateHandle savepoint =
                durable(
                        snapshot(
                                backend,
                                2,
                                storage.initializeLocationForSavepoint(
                                        2, savepointDir.toUri().toString()),
                                SavepointType.savepoint(SavepointFormatType.NATIVE)));
        IncrementalRemoteKeyedStateHandle full =
                durable(
                        snapshot(
                                backend, 3, checkpointLocation(3), CheckpointType.FULL_CHECKPOINT));

        assertThat(placeholders(savepoint)).isEmpty();
        for (HandleAndLocalPath copy : savepoint.getSharedState()) {
            assertThat(local(copy.getHandle())).startsWith(savepointDir).exists();
        }
        assertThat(placeholders(full)).isEmpty();
    }

    /** With the JobManager's checkpoint storage there is no directory to copy into. */
    @Test
    void aCheckpointStorageThatIsNoFileSystemGetsTheLocalHandle() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(job, List.of());
        write(backend, 0, 10);

        KeyedStateHandle handle =
                snapshot(
                        backend,
                        1,
                        new MemCheckpointStreamFactory(1 << 20),
                        CheckpointType.CHECKPOINT);

        assertThat(handle).isExactlyInstanceOf(KeyGroupsStateHandle.class);
    }

    /**
     * The node that held the snapshot is gone with its disk; an empty node under the same name and
     * address takes its place. The restore downloads the cuts and every value is back; a restore
     * where the node holds the snapshot downloads nothing; and the first checkpoint after the
     * restore reuses the restored copies.
     */
    @Test
    void aNodeThatLostItsDiskDownloadsOneThatHasTheSnapshotDoesNot() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(job, List.of());
        write(backend, 0, 300);
        SharedStateRegistryImpl registry = new SharedStateRegistryImpl();
        KeyedStateHandle checkpoint =
                registered(
                        registry,
                        snapshot(backend, 1, checkpointLocation(1), CheckpointType.CHECKPOINT),
                        1);
        DurableBackends.write(backend, 0, 300, 7); // after the checkpoint: must not be restored

        TaishanKeyedStateBackend<String> intact = create(job, List.of(checkpoint));
        assertThat(intact.backendMetrics().restoreDownloadedBytes()).isZero();
        assertValues(intact, 0, 300);
        intact.dispose();

        int port = server.port();
        backend.dispose();
        server.close();
        deleteRecursively(dir.resolve("kv-data"));
        server = startServer(port);

        TaishanKeyedStateBackend<String> rebuilt = create(job, List.of(checkpoint));
        assertThat(rebuilt.backendMetrics().restoreDownloadedBytes()).isPositive();
        assertValues(rebuilt, 0, 300);
        write(rebuilt, 5_000, 5);
        IncrementalRemoteKeyedStateHandle next =
                durable(snapshot(rebuilt, 2, checkpointLocation(2), CheckpointType.CHECKPOINT));
        assertThat(placeholders(next)).isNotEmpty();
    }

    // ---- helpers

    private EmbeddedKvServer startServer(int port) {
        Properties durable = new Properties();
        durable.setProperty("durable.enabled", "true");
        return EmbeddedKvServer.start(
                KvServerConfig.builder()
                        .port(port)
                        .dataDir(dir.resolve("kv-data"))
                        .properties(durable)
                        .build());
    }

    private FsCheckpointStorageLocation checkpointLocation(long checkpointId) throws Exception {
        return (FsCheckpointStorageLocation) storage.initializeLocationForCheckpoint(checkpointId);
    }

    private TaishanKeyedStateBackend<String> create(
            JobID jobId, Collection<KeyedStateHandle> handles) throws Exception {
        TaishanStateBackend backend =
                new TaishanStateBackend()
                        .setKvAddress(server.address())
                        .setDurableCheckpoints(true);
        TaishanKeyedStateBackend<String> keyed = keyed(backend, env, jobId, handles);
        backends.add(keyed);
        return keyed;
    }

    private static IncrementalRemoteKeyedStateHandle durable(KeyedStateHandle handle) {
        assertThat(handle).isInstanceOf(IncrementalRemoteKeyedStateHandle.class);
        return (IncrementalRemoteKeyedStateHandle) handle;
    }

    private static List<String> physicalIds(IncrementalRemoteKeyedStateHandle handle) {
        return handle.getSharedState().stream()
                .map(c -> c.getHandle().getStreamStateHandleID().getKeyString())
                .toList();
    }

    private static Path local(StreamStateHandle handle) {
        return Path.of(((FileStateHandle) handle).getFilePath().toUri().getPath());
    }

    private static void write(TaishanKeyedStateBackend<String> backend, int from, int count)
            throws Exception {
        DurableBackends.write(backend, from, count, 0);
    }

    private static void assertValues(TaishanKeyedStateBackend<String> backend, int from, int count)
            throws Exception {
        for (int i = from; i < from + count; i++) {
            backend.setCurrentKey("k" + i);
            assertThat(state(backend).value()).as("k" + i).isEqualTo(i);
        }
    }
}
