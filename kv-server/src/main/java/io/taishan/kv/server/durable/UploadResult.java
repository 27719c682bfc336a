package io.taishan.kv.server.durable;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.annotation.Nullable;

/**
 * What an upload left in Flink's checkpoint storage, all of it complete and verified by its size
 * (there is no partial result: a failed upload reports nothing).
 *
 * @param storeId as in the request
 * @param uploaded the data files this call wrote, in the request's order
 * @param reused the data files referenced instead, copies the request offered
 * @param metadataPack the one object holding every other file, or null if there was none
 * @param packedFileNames the files inside {@code metadataPack}, in the request's order
 * @param uploadedBytes what this call wrote: the uploaded files and the pack (Flink's "checkpointed
 *     size" of an incremental checkpoint)
 * @param reusedBytes the sizes of the reused files
 */
public record UploadResult(
        String storeId,
        List<CutFile> uploaded,
        List<CutFile> reused,
        @Nullable RemoteFile metadataPack,
        List<String> packedFileNames,
        long uploadedBytes,
        long reusedBytes) {

    public UploadResult {
        uploaded = List.copyOf(uploaded);
        reused = List.copyOf(reused);
        packedFileNames = List.copyOf(packedFileNames);
    }

    /** Every data file with its copy, uploaded or reused: what a restore downloads. */
    public List<CutFile> dataFiles() {
        List<CutFile> all = new ArrayList<>(uploaded.size() + reused.size());
        all.addAll(uploaded);
        all.addAll(reused);
        return all;
    }

    /** Where each data file's copy is, to be kept beside the cut (the reuse sidecar). */
    public FileOrigins origins() {
        return FileOrigins.of(storeId, dataFiles());
    }

    /** What a download of this cut must be given. */
    public DownloadRequest downloadInto(Path targetDir) {
        return new DownloadRequest(dataFiles(), metadataPack, targetDir);
    }
}
