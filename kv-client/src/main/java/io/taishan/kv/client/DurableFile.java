package io.taishan.kv.client;

import java.util.Objects;

/**
 * A file of a cut as copied into Flink's checkpoint storage.
 *
 * @param name its name in the cut directory ({@code 000123.sst}); empty for a metadata pack
 * @param path the copy, as a Flink {@code Path} ({@code s3://bucket/job/shared/1f0c...})
 * @param sizeBytes its length
 * @param crc32c CRC32C of its bytes, checked before a downloaded copy is used
 */
public record DurableFile(String name, String path, long sizeBytes, int crc32c) {
    public DurableFile {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(path, "path");
        if (sizeBytes < 0) {
            throw new IllegalArgumentException("negative size " + sizeBytes + " of " + path);
        }
    }
}
