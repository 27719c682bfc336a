package io.taishan.snapshot.gc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.DurableCut;
import io.taishan.snapshot.DurableCheckpointHandles;
import io.taishan.snapshot.ShardSnapshotRef;
import io.taishan.snapshot.TaishanManifest;
import io.taishan.snapshot.TestDurableCuts;
import io.taishan.snapshot.TestMetaInfo;
import io.taishan.snapshot.TestOperatorStates;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.CheckpointProperties;
import org.apache.flink.runtime.checkpoint.CheckpointRetentionPolicy;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.checkpoint.metadata.MetadataV3Serializer;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointStateOutputStream;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeOffsets;
import org.apache.flink.runtime.state.KeyGroupsSavepointStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStreamFactory;
import org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real {@code _metadata} files, written by Flink's own serializer with manifests inline, in files
 * beside it (relative handles, as Flink writes a checkpoint's exclusive state) and at absolute
 * paths, read back as the admin's gc reads them.
 */
class KeptCheckpointReaderTest {
    private static final ClassLoader CL = KeptCheckpointReaderTest.class.getClassLoader();

    @TempDir java.nio.file.Path root;

    @Test
    void retainedCheckpointReferencesEveryKeyGroupOfEveryManifest() throws Exception {
        java.nio.file.Path dir = root.resolve("chk-12");
        Files.createDirectories(dir);
        KeyGroupsStateHandle low = manifest(fileFactory(dir), "flink_a_op1", 0, 4, 12);
        KeyGroupsStateHandle high = manifest(fileFactory(dir), "flink_a_op1", 5, 9, 12);
        KeyGroupsStateHandle inline = manifest(memFactory(), "flink_a_op2", 0, 9, 11);
        KeyGroupsStateHandle heap = foreign();
        assertThat(low.getDelegateStateHandle()).isInstanceOf(RelativeFileStateHandle.class);
        assertThat(inline.getDelegateStateHandle()).isInstanceOf(ByteStreamStateHandle.class);

        writeMetadata(
                dir,
                12,
                CheckpointProperties.forCheckpoint(
                        CheckpointRetentionPolicy.RETAIN_ON_CANCELLATION),
                operator(low, high),
                operator(inline),
                operator(heap));

        for (String pointer :
                List.of(dir.toString(), dir.resolve("_metadata").toUri().toString())) {
            KeptCheckpoint kept = KeptCheckpointReader.read(pointer, CL);
            assertThat(kept.pointer()).isEqualTo(pointer);
            assertThat(kept.location()).isEqualTo("file:" + dir);
            assertThat(kept.checkpointId()).isEqualTo(12);
            assertThat(kept.kind()).isEqualTo(KeptCheckpoint.Kind.CHECKPOINT);
            assertThat(kept.taishanStates()).isEqualTo(3);
            assertThat(kept.otherStates()).isEqualTo(1);
            List<ShardSnapshotRef> expected = new ArrayList<>();
            for (int kg = 0; kg <= 9; kg++) {
                expected.add(new ShardSnapshotRef("flink_a_op1", kg, 12));
            }
            for (int kg = 0; kg <= 9; kg++) {
                expected.add(new ShardSnapshotRef("flink_a_op2", kg, 11));
            }
            assertThat(kept.references()).containsExactlyElementsOf(expected);
        }
    }

    /** A savepoint is relocatable: its manifests are found beside its {@code _metadata}. */
    @Test
    void relativeManifestsResolveWhereTheDirectoryIsNow() throws Exception {
        java.nio.file.Path dir = root.resolve("savepoint-abc");
        Files.createDirectories(dir);
        writeMetadata(
                dir,
                7,
                CheckpointProperties.forSavepoint(true, SavepointFormatType.NATIVE),
                operator(manifest(fileFactory(dir), "flink_b_op", 0, 9, 7)));
        java.nio.file.Path moved = root.resolve("elsewhere").resolve("savepoint-abc");
        Files.createDirectories(moved.getParent());
        Files.move(dir, moved);

        KeptCheckpoint kept = KeptCheckpointReader.read(moved.toString(), CL);

        assertThat(kept.kind()).isEqualTo(KeptCheckpoint.Kind.NATIVE_SAVEPOINT);
        assertThat(kept.references())
                .hasSize(10)
                .allSatisfy(ref -> assertThat(ref.snapshotId()).isEqualTo(7))
                .extracting(ShardSnapshotRef::table)
                .containsOnly("flink_b_op");
    }

    /**
     * A durable checkpoint's manifest is the meta state of an {@link
     * IncrementalRemoteKeyedStateHandle}, the class RocksDB's incremental checkpoints use too: the
     * manifest's references are read, RocksDB's handle references nothing.
     */
    @Test
    void aDurableCheckpointsReferencesAreReadFromItsIncrementalHandle() throws Exception {
        java.nio.file.Path dir = root.resolve("chk-21");
        Files.createDirectories(dir);
        DurableCut cut =
                TestDurableCuts.cut(
                        List.of(0, 1, 2, 3, 4),
                        root.resolve("shared"),
                        dir,
                        List.of("7.sst"),
                        List.of());
        StreamStateHandle manifest =
                TaishanManifest.writeDurable(
                        fileFactory(dir)
                                .createCheckpointStateOutputStream(
                                        CheckpointedStateScope.EXCLUSIVE),
                        new CloseableRegistry(),
                        TestMetaInfo.counts(),
                        KeyGroupRange.of(0, 4),
                        kg -> new ShardSnapshotRef("flink_d_op", kg, 21),
                        kg -> cut.cutId(),
                        List.of(cut));
        IncrementalRemoteKeyedStateHandle durable =
                DurableCheckpointHandles.handle(
                        UUID.randomUUID(),
                        KeyGroupRange.of(0, 4),
                        21,
                        List.of(cut),
                        Set.of(),
                        Path.fromLocalFile(dir.toFile()).toString(),
                        manifest,
                        0);
        IncrementalRemoteKeyedStateHandle rocksDb =
                new IncrementalRemoteKeyedStateHandle(
                        UUID.randomUUID(),
                        KeyGroupRange.of(5, 9),
                        21,
                        List.of(),
                        List.of(),
                        new ByteStreamStateHandle("rocksdb-meta", new byte[] {0, 0, 0, 6}),
                        0);
        writeMetadata(
                dir,
                21,
                CheckpointProperties.forCheckpoint(
                        CheckpointRetentionPolicy.RETAIN_ON_CANCELLATION),
                operator(durable, rocksDb));

        KeptCheckpoint kept = KeptCheckpointReader.read(dir.toString(), CL);

        assertThat(kept.taishanStates()).isEqualTo(1);
        assertThat(kept.otherStates()).isEqualTo(1);
        assertThat(kept.references())
                .containsExactly(
                        new ShardSnapshotRef("flink_d_op", 0, 21),
                        new ShardSnapshotRef("flink_d_op", 1, 21),
                        new ShardSnapshotRef("flink_d_op", 2, 21),
                        new ShardSnapshotRef("flink_d_op", 3, 21),
                        new ShardSnapshotRef("flink_d_op", 4, 21));
    }

    @Test
    void aCanonicalSavepointReferencesNothing() throws Exception {
        java.nio.file.Path dir = root.resolve("savepoint-canonical");
        Files.createDirectories(dir);
        KeyGroupsStateHandle entries = foreign();
        writeMetadata(
                dir,
                9,
                CheckpointProperties.forSavepoint(true, SavepointFormatType.CANONICAL),
                operator(
                        new KeyGroupsSavepointStateHandle(
                                entries.getGroupRangeOffsets(), entries.getDelegateStateHandle())));

        KeptCheckpoint kept = KeptCheckpointReader.read(dir.toString(), CL);

        assertThat(kept.kind()).isEqualTo(KeptCheckpoint.Kind.CANONICAL_SAVEPOINT);
        assertThat(kept.references()).isEmpty();
        assertThat(kept.taishanStates()).isZero();
        assertThat(kept.otherStates()).isEqualTo(1);
    }

    /** Format version 3 has no checkpoint properties: the handles tell what they can. */
    @Test
    void olderMetadataWithoutPropertiesStillReadsItsReferences() throws Exception {
        java.nio.file.Path dir = root.resolve("chk-3");
        Files.createDirectories(dir);
        CheckpointMetadata metadata =
                new CheckpointMetadata(
                        3, List.of(operator(manifest(memFactory(), "t", 0, 9, 3))), List.of());
        try (OutputStream file = Files.newOutputStream(dir.resolve("_metadata"));
                DataOutputStream out = new DataOutputStream(file)) {
            Checkpoints.storeCheckpointMetadata(metadata, out, MetadataV3Serializer.INSTANCE);
        }

        KeptCheckpoint kept = KeptCheckpointReader.read(dir.toString(), CL);

        assertThat(kept.kind()).isEqualTo(KeptCheckpoint.Kind.UNKNOWN);
        assertThat(kept.references()).hasSize(10);
    }

    @Test
    void whatIsNotAReadableCheckpointFailsNamingThePath() throws Exception {
        java.nio.file.Path missing = root.resolve("no-such-checkpoint");
        assertThatThrownBy(() -> KeptCheckpointReader.read(missing.toString(), CL))
                .isInstanceOf(IOException.class)
                .hasMessageContaining(missing.toString());

        java.nio.file.Path noMetadata = Files.createDirectories(root.resolve("job-dir"));
        assertThatThrownBy(() -> KeptCheckpointReader.read(noMetadata.toString(), CL))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("_metadata")
                .hasMessageContaining(noMetadata.toString());

        java.nio.file.Path garbage = root.resolve("garbage");
        Files.writeString(garbage, "this is not a checkpoint's metadata");
        assertThatThrownBy(() -> KeptCheckpointReader.read(garbage.toString(), CL))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("not a readable checkpoint or savepoint")
                .hasMessageContaining(garbage.toString());
    }

    /** What it references cannot be told, so nothing may be dropped on its account. */
    @Test
    void aManifestThatIsGoneFailsTheRead() throws Exception {
        java.nio.file.Path dir = root.resolve("chk-5");
        Files.createDirectories(dir);
        Path manifestFile = Path.fromLocalFile(dir.resolve("manifest").toFile());
        KeyGroupsStateHandle handle;
        try (CheckpointStateOutputStream out =
                new FsCheckpointStreamFactory.FsCheckpointStateOutputStream(
                        manifestFile.getParent(), FileSystem.getLocalFileSystem(), 4096, 0)) {
            handle =
                    TaishanManifest.write(
                            out,
                            new CloseableRegistry(),
                            TestMetaInfo.counts(),
                            KeyGroupRange.of(0, 9),
                            kg -> new ShardSnapshotRef("t", kg, 5));
        }
        assertThat(handle.getDelegateStateHandle()).isExactlyInstanceOf(FileStateHandle.class);
        writeMetadata(
                dir,
                5,
                CheckpointProperties.forCheckpoint(
                        CheckpointRetentionPolicy.RETAIN_ON_CANCELLATION),
                operator(handle));
        Files.delete(
                java.nio.file.Path.of(
                        ((FileStateHandle) handle.getDelegateStateHandle()).getFilePath().toUri()));

        assertThatThrownBy(() -> KeptCheckpointReader.read(dir.toString(), CL))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("cannot be read")
                .hasMessageContaining(manifestFile.getParent().toString());
    }

    @Test
    void theMainPrintsTheListOnlyWhenEveryPathReads() throws Exception {
        java.nio.file.Path dir = root.resolve("chk-4");
        Files.createDirectories(dir);
        writeMetadata(
                dir,
                4,
                CheckpointProperties.forCheckpoint(
                        CheckpointRetentionPolicy.RETAIN_ON_CANCELLATION),
                operator(manifest(memFactory(), "flink_x_op", 0, 1, 4)));

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = KeptSnapshotsMain.run(new String[] {dir.toString()}, print(out), print(err));

        assertThat(exit).isZero();
        assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
        assertThat(out.toString(StandardCharsets.UTF_8).lines())
                .containsExactly(
                        "taishan-kept-snapshots\t1",
                        "checkpoint\t4\tcheckpoint\t1\t0\t" + "file:" + dir,
                        "snapshot\tflink_x_op\t0\t4",
                        "snapshot\tflink_x_op\t1\t4",
                        "end\t1\t2");

        out.reset();
        String missing = root.resolve("gone").toString();
        exit =
                KeptSnapshotsMain.run(
                        new String[] {dir.toString(), missing}, print(out), print(err));

        assertThat(exit).isEqualTo(KeptSnapshotsMain.EXIT_UNREADABLE);
        assertThat(out.size()).isZero();
        assertThat(err.toString(StandardCharsets.UTF_8))
                .startsWith("cannot read " + missing + ": ");
    }

    private static PrintStream print(ByteArrayOutputStream bytes) {
        return new PrintStream(bytes, true, StandardCharsets.UTF_8);
    }

    private static FsCheckpointStreamFactory fileFactory(java.nio.file.Path dir) {
        Path path = Path.fromLocalFile(dir.toFile());
        return new FsCheckpointStreamFactory(FileSystem.getLocalFileSystem(), path, path, 0, 4096);
    }

    private static MemCheckpointStreamFactory memFactory() {
        return new MemCheckpointStreamFactory(1 << 20);
    }

    private static KeyGroupsStateHandle manifest(
            org.apache.flink.runtime.state.CheckpointStreamFactory factory,
            String table,
            int firstKeyGroup,
            int lastKeyGroup,
            long snapshotId)
            throws IOException {
        return TaishanManifest.write(
                factory.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE),
                new CloseableRegistry(),
                TestMetaInfo.counts(),
                KeyGroupRange.of(firstKeyGroup, lastKeyGroup),
                kg -> new ShardSnapshotRef(table, kg, snapshotId));
    }

    /** What a heap snapshot looks like to us: a key-group stream that is no manifest. */
    private static KeyGroupsStateHandle foreign() {
        return new KeyGroupsStateHandle(
                new KeyGroupRangeOffsets(KeyGroupRange.of(0, 9)),
                new ByteStreamStateHandle(
                        "heap", "entries of another backend".getBytes(StandardCharsets.UTF_8)));
    }

    private static OperatorState operator(KeyedStateHandle... subtasks) {
        OperatorState operator = TestOperatorStates.of(new OperatorID(), subtasks.length, 128);
        for (int i = 0; i < subtasks.length; i++) {
            operator.putState(
                    i, OperatorSubtaskState.builder().setManagedKeyedState(subtasks[i]).build());
        }
        return operator;
    }

    private static void writeMetadata(
            java.nio.file.Path dir,
            long checkpointId,
            CheckpointProperties properties,
            OperatorState... operators)
            throws IOException {
        CheckpointMetadata metadata =
                new CheckpointMetadata(checkpointId, List.of(operators), List.of(), properties);
        try (OutputStream file = Files.newOutputStream(dir.resolve("_metadata"))) {
            Checkpoints.storeCheckpointMetadata(metadata, file);
        }
    }
}
