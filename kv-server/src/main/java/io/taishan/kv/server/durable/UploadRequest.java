package io.taishan.kv.server.durable;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * What to upload: files of one cut's directory, and where to.
 *
 * <p>Data files ({@code *.sst}, {@code *.blob}: immutable, large, shared by later checkpoints) each
 * become an object of their own under {@code sharedDir}, named by a random UUID as Flink's RocksDB
 * backend names its shared files, unless {@link #reusable} holds a copy under the file's {@link
 * FileIdentity}. Every other file (MANIFEST, CURRENT, OPTIONS, the server's own records: small, and
 * rewritten by every cut) goes into one {@link MetadataPack} object under {@code exclusiveDir},
 * uploaded every time.
 *
 * @param storeId the store the cut was taken from (see {@link FileIdentity} for what it must be)
 * @param localDir the cut's directory; its files must not change while they are read (a cut's files
 *     never do)
 * @param fileNames the files of {@code localDir} to upload, plain names, each once (what the cut
 *     needs on a restore: a Bloom filter bundle the server rebuilds may be left out)
 * @param sharedDir where data files go, a Flink path ({@code
 *     s3://bucket/checkpoints/<job>/shared}); an entropy key in it is replaced per file as Flink
 *     does ({@code s3.entropy.key})
 * @param exclusiveDir where the metadata pack goes (the checkpoint's own directory, or {@code
 *     sharedDir})
 * @param reusable copies the caller allows this upload to reference instead of uploading, by the
 *     identity of the local file they are a copy of: only files of the last checkpoint Flink
 *     confirmed, as its RocksDB backend does (see the package doc)
 */
public record UploadRequest(
        String storeId,
        Path localDir,
        List<String> fileNames,
        String sharedDir,
        String exclusiveDir,
        Map<FileIdentity, RemoteFile> reusable) {

    public UploadRequest {
        Objects.requireNonNull(storeId, "storeId");
        Objects.requireNonNull(localDir, "localDir");
        fileNames = List.copyOf(fileNames);
        Set<String> seen = new HashSet<>();
        for (String name : fileNames) {
            if (!seen.add(CutFile.checkFileName(name))) {
                throw new IllegalArgumentException("file '" + name + "' named twice");
            }
        }
        requireNonEmpty(sharedDir, "sharedDir");
        requireNonEmpty(exclusiveDir, "exclusiveDir");
        reusable = Map.copyOf(reusable);
    }

    /** Every file to {@code targetDir}, nothing to reuse: a first or a full checkpoint. */
    public static UploadRequest of(
            String storeId, Path localDir, List<String> fileNames, String targetDir) {
        return new UploadRequest(storeId, localDir, fileNames, targetDir, targetDir, Map.of());
    }

    /** The same request, allowed to reference these copies instead of uploading. */
    public UploadRequest withReusable(Map<FileIdentity, RemoteFile> copies) {
        return new UploadRequest(storeId, localDir, fileNames, sharedDir, exclusiveDir, copies);
    }

    /** Whether a file is uploaded as an object of its own (else it goes into the pack). */
    static boolean isDataFile(String fileName) {
        return fileName.endsWith(".sst") || fileName.endsWith(".blob");
    }

    private static void requireNonEmpty(String value, String what) {
        Objects.requireNonNull(value, what);
        if (value.isBlank()) {
            throw new IllegalArgumentException(what + " is empty");
        }
    }
}
