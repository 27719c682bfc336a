package io.taishan.kv.client;

/** The request limits a server enforces; the client checks them before sending. */
public record KvLimits(
        int maxKeyBytes,
        int maxValueBytes,
        int maxRequestBytes,
        int maxOpsPerRequest,
        int maxScanPageEntries,
        int maxScanPageBytes) {}
