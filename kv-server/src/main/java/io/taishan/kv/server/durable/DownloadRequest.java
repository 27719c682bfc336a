package io.taishan.kv.server.durable;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
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
 */
public record DownloadRequest(
        List<CutFile> files, @Nullable RemoteFile metadataPack, Path targetDir) {

    public DownloadRequest {
        files = List.copyOf(files);
        Set<String> seen = new HashSet<>();
        for (CutFile file : files) {
            if (!seen.add(file.fileName())) {
                throw new IllegalArgumentException("file '" + file.fileName() + "' named twice");
            }
        }
        Objects.requireNonNull(targetDir, "targetDir");
        if (targetDir.getParent() == null) {
            throw new IllegalArgumentException("targetDir has no parent: " + targetDir);
        }
    }

    /** Bytes to read from storage. */
    long totalBytes() {
        long total = metadataPack == null ? 0 : metadataPack.sizeBytes();
        for (CutFile file : files) {
            total += file.remote().sizeBytes();
        }
        return total;
    }
}
