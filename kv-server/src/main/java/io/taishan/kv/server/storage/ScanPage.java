package io.taishan.kv.server.storage;

import java.util.List;

/**
 * One page of a scan.
 *
 * @param nextStartKey where the next page starts (inclusive) when {@code hasMore}; else empty
 */
public record ScanPage(List<Entry> entries, boolean hasMore, byte[] nextStartKey) {

    /** One key and its value (empty for a keys-only scan). */
    public record Entry(byte[] key, byte[] value) {}
}
