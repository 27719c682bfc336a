package io.taishan.kv.server.durable;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import javax.annotation.Nullable;

/**
 * What to download: the files of one cut from Flink's checkpoint storage into a new local
 * directory.
 *
 * @param files the data files, each under its local name
 * @param metadataPack the upload's {@link MetadataPack}, unpacked into the same directory; null if
 *     the upload had none
 * @param targetDir the directory to create; it must not exist, and its parent must. The files are
 *     downloaded into a sibling staging directory and renamed to it only once every one is there
 *     and verified, so it either appears whole or not at all
 * @param localCopies per data file name, a file on this node with exactly its copy's bytes (a file
 *     of another cut whose record names the same copy): hard-linked instead of downloaded, and
 *     downloaded after all if the link fails or its size differs
 */
public record DownloadRequest(
        List<CutFile> files,
        @Nullable RemoteFile metadataPack,
        Path targetDir,
        Map<String, Path> localCopies) {

    public DownloadRequest {
        files = List.copyOf(files);
        localCopies = Map.copyOf(localCopies);
        Set<String> seen = new HashSet<>();
        for (CutFile file : files) {
            if (!seen.add(file.fileName())) {
                throw new IllegalArgumentException("file '" + file.fileName() + "' named twice");
            }
        }
        for (String name : localCopies.keySet()) {
            if (!seen.contains(name)) {
                throw new IllegalArgumentException("a local copy of '" + name + "', not a file");
            }
        }
        Objects.requireNonNull(targetDir, "targetDir");
        if (targetDir.getParent() == null) {
            throw new IllegalArgumentException("targetDir has no parent: " + targetDir);
        }
    }

    /** Every file from storage. */
    public DownloadRequest(List<CutFile> files, @Nullable RemoteFile metadataPack, Path targetDir) {
        this(files, metadataPack, targetDir, Map.of());
    }

    /** Bytes of the pack and the files, linked ones included. */
    long totalBytes() {
        long total = metadataPack == null ? 0 : metadataPack.sizeBytes();
        for (CutFile file : files) {
            total += file.remote().sizeBytes();
        }
        return total;
    }

    /** Bytes of the pack and the files that have no local copy. */
    long bytesToDownload() {
        long total = metadataPack == null ? 0 : metadataPack.sizeBytes();
        for (CutFile file : files) {
            if (!localCopies.containsKey(file.fileName())) {
                total += file.remote().sizeBytes();
            }
        }
        return total;
    }
}
