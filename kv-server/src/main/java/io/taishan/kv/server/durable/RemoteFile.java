package io.taishan.kv.server.durable;

import java.util.Objects;

/**
 * A file in Flink's checkpoint storage, as this package wrote it or as a download expects it: where
 * it is, how long it is and the CRC32C of its bytes. What a checkpoint handle must keep of a file
 * so that a later download can refuse anything but exactly those bytes.
 *
 * @param path a Flink {@code Path} as a string, with its scheme ({@code s3://bucket/job/shared/…},
 *     {@code file:///…})
 * @param sizeBytes its length
 * @param crc32c the CRC32C (Castagnoli) of its bytes, as {@link java.util.zip.CRC32C} computes it
 */
public record RemoteFile(String path, long sizeBytes, int crc32c) {
    public RemoteFile {
        Objects.requireNonNull(path, "path");
        if (path.isEmpty()) {
            throw new IllegalArgumentException("empty remote path");
        }
        if (sizeBytes < 0) {
            throw new IllegalArgumentException("negative size " + sizeBytes + " of " + path);
        }
    }

    @Override
    public String toString() {
        return path + " (" + sizeBytes + " bytes, CRC32C " + crc32cHex(crc32c) + ")";
    }

    static String crc32cHex(int crc) {
        return String.format("%08x", crc);
    }
}
