package io.taishan.snapshot.gc;

import io.taishan.snapshot.ShardSnapshotRef;
import io.taishan.snapshot.TaishanManifest;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointProperties;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupsSavepointStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.changelog.ChangelogStateBackendHandle;
import org.apache.flink.runtime.state.filesystem.AbstractFsCheckpointStorageAccess;
import org.apache.flink.runtime.state.filesystem.FsCompletedCheckpointStorageLocation;

/**
 * Reads a retained checkpoint's or savepoint's {@code _metadata} as Flink's JobManager does on a
 * restore, and collects the remote shard snapshots its Taishan manifests reference.
 *
 * <p>The path is resolved by {@link AbstractFsCheckpointStorageAccess#resolveCheckpointPointer}: a
 * directory or its {@code _metadata}, on any file system Flink has. Its resolved directory is the
 * external pointer the metadata is read with, so that the relative file handles of a savepoint
 * (manifests in the savepoint's own directory, which may have been moved) resolve as on a restore.
 *
 * <p>Anything it cannot vouch for fails the read rather than being skipped, since a caller drops
 * what the result does not name: a path that is not a checkpoint, a manifest that does not open, a
 * keyed state handle of a type that could wrap a manifest unseen.
 */
public final class KeptCheckpointReader {
    private KeptCheckpointReader() {}

    public static KeptCheckpoint read(String pointer, ClassLoader classLoader) throws IOException {
        FsCompletedCheckpointStorageLocation location =
                AbstractFsCheckpointStorageAccess.resolveCheckpointPointer(pointer);
        CheckpointMetadata metadata;
        try (InputStream in = location.getMetadataHandle().openInputStream()) {
            metadata =
                    Checkpoints.loadCheckpointMetadata(
                            new DataInputStream(in), classLoader, location.getExternalPointer());
        } catch (IOException e) {
            throw new IOException(
                    "not a readable checkpoint or savepoint: "
                            + location.getMetadataHandle().getFilePath()
                            + ": "
                            + e.getMessage(),
                    e);
        }
        Collector collector = new Collector();
        for (OperatorState operator : metadata.getOperatorStates()) {
            for (OperatorSubtaskState subtask : operator.getStates()) {
                // Raw keyed state is the operator's own stream (heap timers), never a manifest.
                for (KeyedStateHandle handle : subtask.getManagedKeyedState()) {
                    collector.add(handle, operator);
                }
            }
        }
        List<ShardSnapshotRef> references = new ArrayList<>(collector.references);
        references.sort(
                Comparator.comparing(ShardSnapshotRef::table)
                        .thenComparingInt(ShardSnapshotRef::shard)
                        .thenComparingLong(ShardSnapshotRef::snapshotId));
        return new KeptCheckpoint(
                pointer,
                location.getExternalPointer(),
                metadata.getCheckpointId(),
                kind(metadata.getCheckpointProperties(), collector.canonical),
                collector.taishan,
                collector.other,
                references);
    }

    private static KeptCheckpoint.Kind kind(CheckpointProperties properties, int canonical) {
        if (properties == null) {
            return canonical > 0
                    ? KeptCheckpoint.Kind.CANONICAL_SAVEPOINT
                    : KeptCheckpoint.Kind.UNKNOWN;
        }
        if (!properties.isSavepoint()) {
            return KeptCheckpoint.Kind.CHECKPOINT;
        }
        SavepointFormatType format =
                ((SavepointType) properties.getCheckpointType()).getFormatType();
        return format == SavepointFormatType.CANONICAL
                ? KeptCheckpoint.Kind.CANONICAL_SAVEPOINT
                : KeptCheckpoint.Kind.NATIVE_SAVEPOINT;
    }

    private static final class Collector {
        final Set<ShardSnapshotRef> references = new LinkedHashSet<>();
        int taishan;
        int canonical;
        int other;

        void add(KeyedStateHandle handle, OperatorState operator) throws IOException {
            if (handle == null) {
                return;
            }
            if (handle instanceof KeyGroupsSavepointStateHandle) {
                // A canonical savepoint holds the entries themselves, whichever backend wrote it.
                canonical++;
                other++;
            } else if (handle instanceof KeyGroupsStateHandle keyGroups) {
                addManifest(
                        keyGroups.getDelegateStateHandle(),
                        () -> TaishanManifest.readReferences(keyGroups),
                        operator);
            } else if (handle instanceof IncrementalRemoteKeyedStateHandle incremental) {
                // A durable Taishan checkpoint, its manifest the meta state; or RocksDB's.
                addManifest(
                        incremental.getMetaDataStateHandle(),
                        () -> TaishanManifest.readReferences(incremental),
                        operator);
            } else if (handle instanceof ChangelogStateBackendHandle changelog) {
                // The materialized part is the wrapped backend's own handles.
                for (KeyedStateHandle materialized : changelog.getMaterializedStateHandles()) {
                    add(materialized, operator);
                }
            } else if (handle instanceof IncrementalKeyedStateHandle) {
                // RocksDB's local or changelog kinds: its files, never a Taishan manifest.
                other++;
            } else {
                throw new IOException(
                        "operator "
                                + operator.getOperatorID()
                                + " has keyed state of an unknown kind ("
                                + handle.getClass().getName()
                                + "): cannot tell which remote snapshots it needs");
            }
        }

        /** A handle whose manifest, if it is Taishan's, names the snapshots it needs. */
        private void addManifest(
                StreamStateHandle manifest, ManifestReferences read, OperatorState operator)
                throws IOException {
            try {
                if (TaishanManifest.isManifest(manifest)) {
                    taishan++;
                    references.addAll(read.get().values());
                } else {
                    other++;
                }
            } catch (IOException e) {
                throw new IOException(
                        "operator "
                                + operator.getOperatorID()
                                + ": its keyed state "
                                + manifest
                                + " cannot be read ("
                                + e.getMessage()
                                + "), so what it references cannot be told",
                        e);
            }
        }
    }

    /** Reads a manifest's references. */
    private interface ManifestReferences {
        Map<Integer, ShardSnapshotRef> get() throws IOException;
    }
}
