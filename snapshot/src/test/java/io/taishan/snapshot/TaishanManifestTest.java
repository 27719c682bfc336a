package io.taishan.snapshot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.checkpoint.metadata.MetadataV3Serializer;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeOffsets;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStreamFactory;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TaishanManifestTest {
    private static final KeyGroupRange RANGE = KeyGroupRange.of(0, 9);
    private static final String TABLE = "flink_job_op";

    @TempDir java.nio.file.Path checkpointDir;

    @Test
    void inlineManifestSurvivesTheJobManagerMetadataSerializer() throws Exception {
        roundTripThroughMetadata(new MemCheckpointStreamFactory(1 << 20));
    }

    /** The JobManager's own path: the handle inside a checkpoint's {@code _metadata}. */
    @Test
    void fileManifestSurvivesTheCheckpointMetadataFile() throws Exception {
        Path dir = Path.fromLocalFile(checkpointDir.toFile());
        KeyGroupsStateHandle written =
                write(
                        new FsCheckpointStreamFactory(
                                FileSystem.getLocalFileSystem(), dir, dir, 0, 4096),
                        9);
        OperatorID operatorId = new OperatorID();
        OperatorState operator = TestOperatorStates.of(operatorId, 1, 128);
        operator.putState(0, OperatorSubtaskState.builder().setManagedKeyedState(written).build());

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            Checkpoints.storeCheckpointMetadata(
                    new CheckpointMetadata(9, List.of(operator), List.of()), out);
        }
        // Read back as a restore does: relative file handles resolve against the _metadata dir.
        java.nio.file.Files.write(checkpointDir.resolve("_metadata"), bytes.toByteArray());
        CheckpointMetadata read;
        try (DataInputStream in =
                new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            read =
                    Checkpoints.loadCheckpointMetadata(
                            in, getClass().getClassLoader(), checkpointDir.toUri().toString());
        }

        KeyedStateHandle handle =
                read.getOperatorStates()
                        .iterator()
                        .next()
                        .getState(0)
                        .getManagedKeyedState()
                        .iterator()
                        .next();
        assertThat(handle).isExactlyInstanceOf(KeyGroupsStateHandle.class);
        TaishanManifest.Contents<String> contents =
                TaishanManifest.read(
                        (KeyGroupsStateHandle) handle,
                        getClass().getClassLoader(),
                        new CloseableRegistry());
        assertThat(contents.refs().get(9)).isEqualTo(new ShardSnapshotRef(TABLE, 9, 9));
        assertThat(contents.refs()).hasSize(RANGE.getNumberOfKeyGroups());
    }

    @Test
    void rescaledSubtaskReadsOnlyItsKeyGroups() throws Exception {
        KeyGroupsStateHandle handle = write(new MemCheckpointStreamFactory(1 << 20), 42);

        KeyGroupsStateHandle slice = handle.getIntersection(KeyGroupRange.of(3, 5));
        TaishanManifest.Contents<String> contents =
                TaishanManifest.read(slice, getClass().getClassLoader(), new CloseableRegistry());

        assertThat(contents.refs().keySet()).containsExactly(3, 4, 5);
        assertThat(contents.refs().get(4)).isEqualTo(new ShardSnapshotRef(TABLE, 4, 42));
        assertThat(contents.metaInfo().getStateMetaInfoSnapshots())
                .extracting(StateMetaInfoSnapshot::getName)
                .containsExactly("counts");
    }

    @Test
    void streamOfAnotherBackendIsRejectedNamingIt() throws Exception {
        ByteStreamStateHandle foreign =
                new ByteStreamStateHandle(
                        "heap-snapshot", "not a manifest at all".getBytes(StandardCharsets.UTF_8));
        KeyGroupsStateHandle handle =
                new KeyGroupsStateHandle(new KeyGroupRangeOffsets(RANGE), foreign);

        assertThat(TaishanManifest.isManifest(foreign)).isFalse();
        assertThatThrownBy(
                        () ->
                                TaishanManifest.read(
                                        handle,
                                        getClass().getClassLoader(),
                                        new CloseableRegistry()))
                .isInstanceOf(NotATaishanManifestException.class)
                .hasMessageContaining("heap-snapshot")
                .hasMessageContaining("another state backend");
    }

    @Test
    void missingShardSnapshotFailsTheWrite() throws Exception {
        CheckpointStreamFactory factory = new MemCheckpointStreamFactory(1 << 20);
        assertThatThrownBy(
                        () ->
                                TaishanManifest.write(
                                        factory.createCheckpointStateOutputStream(
                                                CheckpointedStateScope.EXCLUSIVE),
                                        new CloseableRegistry(),
                                        TestMetaInfo.counts(),
                                        RANGE,
                                        keyGroup ->
                                                keyGroup == 7
                                                        ? null
                                                        : new ShardSnapshotRef(TABLE, keyGroup, 1)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("key group 7");
    }

    /**
     * A subtask of 32,768 key groups writes a manifest per checkpoint: each record is 16 bytes, the
     * table named once however many records name it; shards cloned from another job's table keep
     * that table's name.
     */
    @Test
    void eachKeyGroupCostsSixteenBytesAndTablesAreNamedOnce() throws Exception {
        KeyGroupRange all = KeyGroupRange.of(0, 32_767);
        String source = "flink_" + "other_job_".repeat(5) + "op";
        KeyGroupsStateHandle handle =
                TaishanManifest.write(
                        new MemCheckpointStreamFactory(8 << 20)
                                .createCheckpointStateOutputStream(
                                        CheckpointedStateScope.EXCLUSIVE),
                        new CloseableRegistry(),
                        TestMetaInfo.counts(),
                        all,
                        keyGroup ->
                                new ShardSnapshotRef(
                                        keyGroup % 3 == 0 ? source : TABLE, keyGroup, 5));

        long recordBytes = handle.getStateSize() - handle.getOffsetForKeyGroup(0);
        assertThat(recordBytes).isEqualTo(32_768L * 16);
        KeyGroupsStateHandle slice = handle.getIntersection(KeyGroupRange.of(30_000, 30_002));
        assertThat(TaishanManifest.readReferences(slice))
                .containsExactly(
                        java.util.Map.entry(30_000, new ShardSnapshotRef(source, 30_000, 5)),
                        java.util.Map.entry(30_001, new ShardSnapshotRef(TABLE, 30_001, 5)),
                        java.util.Map.entry(30_002, new ShardSnapshotRef(TABLE, 30_002, 5)));
    }

    /** Checkpoints taken before the table dictionary (version 1) still restore. */
    @Test
    void aVersionOneManifestStillReads() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        KeyGroupRangeOffsets offsets = new KeyGroupRangeOffsets(RANGE);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeLong(TaishanManifest.MAGIC);
            out.writeInt(1);
            TestMetaInfo.counts()
                    .write(new org.apache.flink.core.memory.DataOutputViewStreamWrapper(out));
            for (int keyGroup : RANGE) {
                out.flush();
                offsets.setKeyGroupOffset(keyGroup, bytes.size());
                out.writeInt(keyGroup);
                out.writeUTF(TABLE);
                out.writeLong(3);
            }
        }
        KeyGroupsStateHandle handle =
                new KeyGroupsStateHandle(
                        offsets, new ByteStreamStateHandle("v1", bytes.toByteArray()));

        TaishanManifest.Contents<String> contents =
                TaishanManifest.read(
                        handle.getIntersection(KeyGroupRange.of(2, 4)),
                        getClass().getClassLoader(),
                        new CloseableRegistry());
        assertThat(contents.refs())
                .containsExactly(
                        java.util.Map.entry(2, new ShardSnapshotRef(TABLE, 2, 3)),
                        java.util.Map.entry(3, new ShardSnapshotRef(TABLE, 3, 3)),
                        java.util.Map.entry(4, new ShardSnapshotRef(TABLE, 4, 3)));
        assertThat(contents.metaInfo().getStateMetaInfoSnapshots())
                .extracting(StateMetaInfoSnapshot::getName)
                .containsExactly("counts");
    }

    private void roundTripThroughMetadata(CheckpointStreamFactory factory) throws Exception {
        KeyGroupsStateHandle written = write(factory, 7);
        assertThat(TaishanManifest.isManifest(written.getDelegateStateHandle())).isTrue();

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            MetadataV3Serializer.INSTANCE.serializeKeyedStateHandleUtil(written, out);
        }
        KeyedStateHandle read;
        try (DataInputStream in =
                new DataInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            read = MetadataV3Serializer.INSTANCE.deserializeKeyedStateHandleUtil(in);
        }

        assertThat(read).isExactlyInstanceOf(KeyGroupsStateHandle.class);
        assertThat(read.getKeyGroupRange()).isEqualTo(RANGE);
        TaishanManifest.Contents<String> contents =
                TaishanManifest.read(
                        (KeyGroupsStateHandle) read,
                        getClass().getClassLoader(),
                        new CloseableRegistry());
        assertThat(contents.refs()).hasSize(RANGE.getNumberOfKeyGroups());
        for (int keyGroup : RANGE) {
            assertThat(contents.refs().get(keyGroup))
                    .isEqualTo(new ShardSnapshotRef(TABLE, keyGroup, 7));
        }
        assertThat(contents.metaInfo().getKeySerializerSnapshot().restoreSerializer())
                .isEqualTo(StringSerializer.INSTANCE);
        List<StateMetaInfoSnapshot> states = contents.metaInfo().getStateMetaInfoSnapshots();
        assertThat(states).extracting(StateMetaInfoSnapshot::getName).containsExactly("counts");
    }

    private static KeyGroupsStateHandle write(CheckpointStreamFactory factory, long snapshotId)
            throws IOException {
        return TaishanManifest.write(
                factory.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE),
                new CloseableRegistry(),
                TestMetaInfo.counts(),
                RANGE,
                keyGroup -> new ShardSnapshotRef(TABLE, keyGroup, snapshotId));
    }
}
