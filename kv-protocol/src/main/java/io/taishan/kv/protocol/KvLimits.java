package io.taishan.kv.protocol;

/**
 * The request limits a server enforces; the client checks them before sending.
 *
 * @param maxValueBytes the largest value at all
 * @param maxInlineValueBytes the largest value that travels inside a Get, MultiGet, Scan or Write
 *     message; larger ones move in chunks (ReadValue, UploadValue)
 */
public record KvLimits(
        int maxKeyBytes,
        int maxValueBytes,
        int maxRequestBytes,
        int maxOpsPerRequest,
        int maxScanPageEntries,
        int maxScanPageBytes,
        int maxInlineValueBytes) {

    /** Limits without large values: every value inline (as a server older than them). */
    public KvLimits(
            int maxKeyBytes,
            int maxValueBytes,
            int maxRequestBytes,
            int maxOpsPerRequest,
            int maxScanPageEntries,
            int maxScanPageBytes) {
        this(
                maxKeyBytes,
                maxValueBytes,
                maxRequestBytes,
                maxOpsPerRequest,
                maxScanPageEntries,
                maxScanPageBytes,
                maxValueBytes);
    }

    /** Whether a value of this size moves in chunks rather than inside one message. */
    public boolean chunked(long valueBytes) {
        return valueBytes > maxInlineValueBytes;
    }
}
