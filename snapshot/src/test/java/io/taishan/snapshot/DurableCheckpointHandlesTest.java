package io.taishan.snapshot;

import static io.taishan.snapshot.TestDurableCuts.cut;
import static io.taishan.snapshot.TestDurableCuts.local;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableFile;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistryImpl;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStreamFactory;
import org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A durable checkpoint's handle through Flink's own machinery: the {@code _metadata} file the
 * JobManager writes and a restore reads (relative handles of a moved savepoint included), the
 * discard of an unregistered handle, and the {@link SharedStateRegistryImpl} that deletes copies
 * once no retained checkpoint references them.
 */
class DurableCheckpointHandlesTest {
    private static final String TABLE = "flink_job_op";
    private static final KeyGroupRange RANGE = KeyGroupRange.of(0, 9);
    private static final ClassLoader CL = DurableCheckpointHandlesTest.class.getClassLoader();

    @TempDir Path job;

    @Test
    void aRestoreReadsItsOwnKeyGroupsWithTheirCutsAndCopiesFromTheMetadataFile() throws Exception {
        Path shared = job.resolve("shared");
        Path chk = job.resolve("chk-7");
        DurableCut low =
                cut(List.of(0, 1, 2, 3, 4), shared, chk, List.of("1.sst", "2.sst"), List.of());
        DurableCut high = cut(List.of(5, 6, 7, 8, 9), shared, chk, List.of("9.sst"), List.of());
        IncrementalRemoteKeyedStateHandle written = handle(7, chk, List.of(low, high), Set.of());

        KeyedStateHandle read = throughMetadataFile(chk, 7, written);

        assertThat(read).isExactlyInstanceOf(IncrementalRemoteKeyedStateHandle.class);
        IncrementalRemoteKeyedStateHandle restored = (IncrementalRemoteKeyedStateHandle) read;
        // Flink hands the whole handle to every subtask whose range it touches.
        assertThat(restored.getIntersection(KeyGroupRange.of(3, 6))).isSameAs(restored);
        assertThat(restored.getPrivateState())
                .extracting(HandleAndLocalPath::getHandle)
                .allSatisfy(h -> assertThat(h).isInstanceOf(RelativeFileStateHandle.class));
        TaishanManifest.Contents<String> contents =
                TaishanManifest.read(restored, KeyGroupRange.of(3, 6), CL, new CloseableRegistry());

        assertThat(contents.refs())
                .containsOnlyKeys(3, 4, 5, 6)
                .containsEntry(5, new ShardSnapshotRef(TABLE, 5, 7));
        assertThat(contents.durableCutIds())
                .containsExactly(
                        Map.entry(3, low.cutId()),
                        Map.entry(4, low.cutId()),
                        Map.entry(5, high.cutId()),
                        Map.entry(6, high.cutId()));
        assertThat(contents.durableCuts().get(low.cutId()))
                .isEqualTo(new DurableCut(low.cutId(), List.of(), low.files(), low.metadataPack()));
        assertThat(contents.durableCuts().get(high.cutId()).files()).isEqualTo(high.files());
        assertThat(contents.metaInfo().getStateMetaInfoSnapshots())
                .extracting(StateMetaInfoSnapshot::getName)
                .containsExactly("counts");
        assertThat(TaishanManifest.readReferences(restored)).hasSize(10);
        assertThat(DurableCheckpointHandles.dataFileCopies(restored))
                .containsExactlyInAnyOrder(
                        low.files().get(0).path(),
                        low.files().get(1).path(),
                        high.files().get(0).path());
    }

    /**
     * A native savepoint is self-contained and relocatable: its copies sit in its own directory, as
     * relative handles, and a restore fetches them where the directory is now.
     */
    @Test
    void aMovedSavepointsCopiesAreFetchedWhereTheyAreNow() throws Exception {
        Path savepoint = job.resolve("savepoint-1a2b");
        DurableCut all =
                cut(
                        List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
                        savepoint,
                        savepoint,
                        List.of("5.sst"),
                        List.of());
        throughMetadataFile(savepoint, 3, handle(3, savepoint, List.of(all), Set.of()));
        Path moved = job.resolve("elsewhere").resolve("savepoint-1a2b");
        Files.createDirectories(moved.getParent());
        Files.move(savepoint, moved);

        IncrementalRemoteKeyedStateHandle read =
                (IncrementalRemoteKeyedStateHandle) readMetadataFile(moved);
        DurableCut restored =
                TaishanManifest.<String>read(read, RANGE, CL, new CloseableRegistry())
                        .durableCuts()
                        .get(all.cutId());

        assertThat(restored.files()).hasSize(1);
        for (DurableFile file : List.of(restored.files().get(0), restored.metadataPack())) {
            assertThat(local(file)).startsWith(moved).exists();
        }
        assertThat(restored.files().get(0).crc32c()).isEqualTo(all.files().get(0).crc32c());
    }

    /**
     * Before the JobManager registered it (an aborted checkpoint, on either side), discarding the
     * handle deletes what this checkpoint wrote and never a copy it reused: that one belongs to the
     * confirmed checkpoint it was reused from.
     */
    @Test
    void discardingAnUnregisteredHandleDeletesOnlyWhatThisCheckpointWrote() throws Exception {
        Path shared = job.resolve("shared");
        DurableCut first =
                cut(
                        List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
                        shared,
                        job.resolve("chk-1"),
                        List.of("1.sst"),
                        List.of());
        DurableFile reused = first.files().get(0);
        DurableCut second =
                cut(
                        List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
                        shared,
                        job.resolve("chk-2"),
                        List.of("2.sst"),
                        List.of(reused));
        IncrementalRemoteKeyedStateHandle handle =
                handle(2, job.resolve("chk-2"), List.of(second), Set.of(reused.path()));
        assertThat(handle.getSharedState().get(0).getHandle())
                .isInstanceOf(PlaceholderStreamStateHandle.class);

        handle.discardState();

        assertThat(local(reused)).exists();
        assertThat(local(second.files().get(1))).doesNotExist();
        assertThat(local(second.metadataPack())).doesNotExist();
    }

    /**
     * The JobManager's registry, as with num-retained 1: once checkpoint 2 is the only one
     * retained, the copy only checkpoint 1 had is deleted, the one checkpoint 2 reused stays.
     */
    @Test
    void theRegistryDeletesCopiesNoRetainedCheckpointReferences() throws Exception {
        Path shared = job.resolve("shared");
        DurableCut first =
                cut(
                        List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
                        shared,
                        job.resolve("chk-1"),
                        List.of("1.sst", "2.sst"),
                        List.of());
        DurableFile kept = first.files().get(0);
        DurableFile dropped = first.files().get(1);
        DurableCut second =
                cut(
                        List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
                        shared,
                        job.resolve("chk-2"),
                        List.of("3.sst"),
                        List.of(kept));
        // Deletes on the calling thread.
        SharedStateRegistryImpl registry = new SharedStateRegistryImpl();
        handle(1, job.resolve("chk-1"), List.of(first), Set.of()).registerSharedStates(registry, 1);
        IncrementalRemoteKeyedStateHandle two =
                handle(2, job.resolve("chk-2"), List.of(second), Set.of(kept.path()));
        two.registerSharedStates(registry, 2);
        registry.checkpointCompleted(2);

        registry.unregisterUnusedState(2);
        registry.close();

        assertThat(two.getSharedState().get(0).getHandle()).isInstanceOf(FileStateHandle.class);
        assertThat(local(dropped)).doesNotExist();
        assertThat(local(kept)).exists();
        assertThat(local(second.files().get(1))).exists();
    }

    @Test
    void aHandleThatLacksACopyItsManifestListsFailsNamingIt() throws Exception {
        Path chk = job.resolve("chk-4");
        DurableCut all =
                cut(
                        List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
                        job.resolve("shared"),
                        chk,
                        List.of("4.sst"),
                        List.of());
        IncrementalRemoteKeyedStateHandle complete = handle(4, chk, List.of(all), Set.of());
        IncrementalRemoteKeyedStateHandle lacking =
                new IncrementalRemoteKeyedStateHandle(
                        UUID.randomUUID(),
                        RANGE,
                        4,
                        List.of(),
                        complete.getPrivateState(),
                        complete.getMetaDataStateHandle(),
                        0);

        assertThatThrownBy(() -> TaishanManifest.read(lacking, RANGE, CL, new CloseableRegistry()))
                .isInstanceOf(IOException.class)
                .hasMessageContaining(all.cutId() + "/4.sst")
                .hasMessageContaining("checkpoint 4");
    }

    /**
     * RocksDB's incremental checkpoints use the same handle class; its meta state is no manifest.
     */
    @Test
    void anotherBackendsIncrementalHandleIsRejectedNamingIt() {
        IncrementalRemoteKeyedStateHandle rocksDb =
                new IncrementalRemoteKeyedStateHandle(
                        UUID.randomUUID(),
                        RANGE,
                        4,
                        List.of(),
                        List.of(),
                        new ByteStreamStateHandle(
                                "rocksdb-meta", new byte[] {0, 0, 0, 6, 1, 2, 3, 4}),
                        0);

        assertThatThrownBy(() -> TaishanManifest.read(rocksDb, RANGE, CL, new CloseableRegistry()))
                .isInstanceOf(NotATaishanManifestException.class)
                .hasMessageContaining("rocksdb-meta")
                .hasMessageContaining("another state backend");
    }

    /** A durable manifest outside its handle is refused rather than misread. */
    @Test
    void aDurableManifestInsideAKeyGroupsHandleIsRefused() throws Exception {
        Path chk = job.resolve("chk-5");
        DurableCut all =
                cut(
                        List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
                        job.resolve("shared"),
                        chk,
                        List.of(),
                        List.of());
        StreamStateHandle manifest =
                manifest(5, List.of(all), new MemCheckpointStreamFactory(1 << 20));
        KeyGroupsStateHandle misplaced =
                new KeyGroupsStateHandle(
                        new org.apache.flink.runtime.state.KeyGroupRangeOffsets(RANGE), manifest);

        assertThatThrownBy(() -> TaishanManifest.read(misplaced, CL, new CloseableRegistry()))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("durable checkpoint");
    }

    // ---- helpers

    private IncrementalRemoteKeyedStateHandle handle(
            long checkpointId, Path exclusiveDir, List<DurableCut> cuts, Set<String> reusable)
            throws IOException {
        org.apache.flink.core.fs.Path dir =
                org.apache.flink.core.fs.Path.fromLocalFile(exclusiveDir.toFile());
        Files.createDirectories(exclusiveDir);
        StreamStateHandle manifest =
                manifest(
                        checkpointId,
                        cuts,
                        new FsCheckpointStreamFactory(
                                FileSystem.getLocalFileSystem(), dir, dir, 0, 4096));
        return DurableCheckpointHandles.handle(
                UUID.randomUUID(),
                RANGE,
                checkpointId,
                cuts,
                reusable,
                dir.toString(),
                manifest,
                123);
    }

    private static StreamStateHandle manifest(
            long checkpointId,
            List<DurableCut> cuts,
            org.apache.flink.runtime.state.CheckpointStreamFactory factory)
            throws IOException {
        return TaishanManifest.writeDurable(
                factory.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE),
                new CloseableRegistry(),
                TestMetaInfo.counts(),
                RANGE,
                keyGroup -> new ShardSnapshotRef(TABLE, keyGroup, checkpointId),
                keyGroup -> holder(cuts, keyGroup),
                cuts);
    }

    private static String holder(List<DurableCut> cuts, int keyGroup) {
        for (DurableCut cut : cuts) {
            if (cut.shards().contains(keyGroup)) {
                return cut.cutId();
            }
        }
        return null;
    }

    /** Writes {@code _metadata} as the JobManager does and reads it back as a restore does. */
    private static KeyedStateHandle throughMetadataFile(
            Path dir, long checkpointId, KeyedStateHandle handle) throws IOException {
        OperatorState operator = TestOperatorStates.of(new OperatorID(), 1, 128);
        operator.putState(0, OperatorSubtaskState.builder().setManagedKeyedState(handle).build());
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            Checkpoints.storeCheckpointMetadata(
                    new CheckpointMetadata(checkpointId, List.of(operator), List.of()), out);
        }
        Files.write(dir.resolve("_metadata"), bytes.toByteArray());
        return readMetadataFile(dir);
    }

    private static KeyedStateHandle readMetadataFile(Path dir) throws IOException {
        CheckpointMetadata read;
        try (DataInputStream in =
                new DataInputStream(
                        new ByteArrayInputStream(Files.readAllBytes(dir.resolve("_metadata"))))) {
            read = Checkpoints.loadCheckpointMetadata(in, CL, dir.toUri().toString());
        }
        List<KeyedStateHandle> handles = new ArrayList<>();
        for (OperatorState operator : read.getOperatorStates()) {
            handles.addAll(operator.getState(0).getManagedKeyedState());
        }
        assertThat(handles).hasSize(1);
        return handles.get(0);
    }
}
