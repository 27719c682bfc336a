package io.taishan.snapshot;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableFile;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle;

/**
 * A durable checkpoint as Flink's own {@link IncrementalRemoteKeyedStateHandle}, so that the
 * JobManager's {@code SharedStateRegistry} owns the copies the kv-server nodes wrote into
 * checkpoint storage, counts their references and deletes them, as it does for Flink's RocksDB
 * backend.
 *
 * <p>Layout: shared state is one entry per data file of every cut holding the subtask's snapshots,
 * local path {@code <cut id>/<file name>}; private state one entry per cut, its metadata pack,
 * local path {@code <cut id>/METADATA-PACK}; meta state the {@link TaishanManifest} (version
 * {@value TaishanManifest#VERSION_DURABLE}), which says which cut holds each key group's snapshot
 * and each file's size and CRC32C. The handle carries the copies' paths, the manifest what the
 * paths do not say, so Flink's own path resolution (a relocated savepoint's relative handles) is
 * what a restore fetches.
 *
 * <p>A copy this checkpoint wrote is a {@link FileStateHandle} ({@link RelativeFileStateHandle}
 * when it sits directly in the checkpoint's exclusive directory, as Flink's exclusive-scope streams
 * make them, so a native savepoint stays relocatable). A copy it reused from the last confirmed
 * checkpoint is a {@link PlaceholderStreamStateHandle}, as Flink's RocksDB backend sends one: the
 * registry swaps in the handle it holds, and a discard of this handle before registration (an
 * aborted checkpoint on the TaskManager or the JobManager) deletes only what this checkpoint wrote,
 * never a file an earlier checkpoint still needs.
 */
public final class DurableCheckpointHandles {
    /** The local path of a cut's metadata pack, after the cut id. */
    static final String PACK = "METADATA-PACK";

    private DurableCheckpointHandles() {}

    /** The local path of a cut's data file in the handle. */
    public static String localPath(String cutId, String fileName) {
        return cutId + "/" + fileName;
    }

    /** The local path of a cut's metadata pack in the handle. */
    public static String packLocalPath(String cutId) {
        return cutId + "/" + PACK;
    }

    /**
     * The handle of a durable checkpoint.
     *
     * @param cuts what the upload reported
     * @param reusable the copies the upload was allowed to reuse: a data file's copy among them was
     *     not written by this checkpoint
     * @param exclusiveDir the checkpoint's own directory
     * @param manifest the written manifest
     * @param checkpointedSize bytes this checkpoint wrote
     */
    public static IncrementalRemoteKeyedStateHandle handle(
            UUID backendId,
            KeyGroupRange range,
            long checkpointId,
            List<DurableCut> cuts,
            Set<String> reusable,
            String exclusiveDir,
            StreamStateHandle manifest,
            long checkpointedSize) {
        Path exclusive = new Path(exclusiveDir);
        List<HandleAndLocalPath> shared = new ArrayList<>();
        List<HandleAndLocalPath> packs = new ArrayList<>();
        for (DurableCut cut : cuts) {
            for (DurableFile file : cut.files()) {
                StreamStateHandle copy =
                        reusable.contains(file.path())
                                ? placeholder(file)
                                : written(file, exclusive);
                shared.add(HandleAndLocalPath.of(copy, localPath(cut.cutId(), file.name())));
            }
            packs.add(
                    HandleAndLocalPath.of(
                            written(cut.metadataPack(), exclusive), packLocalPath(cut.cutId())));
        }
        return new IncrementalRemoteKeyedStateHandle(
                backendId, range, checkpointId, shared, packs, manifest, checkpointedSize);
    }

    /** The paths of the data files' copies a handle references, reused or not. */
    public static Set<String> dataFileCopies(IncrementalRemoteKeyedStateHandle handle)
            throws IOException {
        Set<String> paths = new LinkedHashSet<>();
        for (HandleAndLocalPath entry : handle.getSharedState()) {
            paths.add(pathOf(entry, handle));
        }
        return paths;
    }

    /** Every copy the handle names, shared and private, by local path. */
    static Map<String, String> copiesByLocalPath(IncrementalRemoteKeyedStateHandle handle)
            throws IOException {
        Map<String, String> copies = new HashMap<>();
        for (HandleAndLocalPath entry : handle.getSharedState()) {
            copies.put(entry.getLocalPath(), pathOf(entry, handle));
        }
        for (HandleAndLocalPath entry : handle.getPrivateState()) {
            copies.put(entry.getLocalPath(), pathOf(entry, handle));
        }
        return copies;
    }

    private static String pathOf(HandleAndLocalPath entry, IncrementalRemoteKeyedStateHandle handle)
            throws IOException {
        if (entry.getHandle() instanceof FileStateHandle file) {
            return file.getFilePath().toString();
        }
        // A placeholder is swapped for the registered handle before the JobManager stores or
        // hands out a checkpoint; anything else was not written by this backend.
        throw new IOException(
                "checkpoint "
                        + handle.getCheckpointId()
                        + ": the copy of "
                        + entry.getLocalPath()
                        + " is a "
                        + entry.getHandle().getClass().getName()
                        + ", not a file in checkpoint storage: the handle was not made by"
                        + " Taishan's durable checkpoints");
    }

    private static StreamStateHandle placeholder(DurableFile file) {
        FileStateHandle registered = new FileStateHandle(new Path(file.path()), file.sizeBytes());
        return new PlaceholderStreamStateHandle(
                registered.getStreamStateHandleID(), file.sizeBytes(), false);
    }

    private static FileStateHandle written(DurableFile file, Path exclusiveDir) {
        Path path = new Path(file.path());
        if (exclusiveDir.equals(path.getParent())) {
            return new RelativeFileStateHandle(path, path.getName(), file.sizeBytes());
        }
        return new FileStateHandle(path, file.sizeBytes());
    }
}
