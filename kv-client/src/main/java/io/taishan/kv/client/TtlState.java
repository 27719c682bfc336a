package io.taishan.kv.client;

/**
 * A state with a time-to-live, as the server needs to know it to delete its expired entries: its id
 * (the first 4 bytes of its keys), its TTL, and where its values keep the 8-byte last-access
 * timestamp that Flink's TTL wrapper writes.
 *
 * @param fixedElementBytes for {@link Layout#LIST}: one element's serialized length when all have
 *     the same, else 0 (such a list is never expired by the server)
 */
public record TtlState(int stateId, long ttlMillis, Layout layout, int fixedElementBytes) {

    /** Where a value keeps its timestamp. */
    public enum Layout {
        /** Value, reducing and aggregating state: first in the value. */
        VALUE,
        /** A map entry: behind the 1-byte null flag. */
        MAP_ENTRY,
        /** A list: first in each ','-joined element. */
        LIST
    }

    public TtlState {
        if (ttlMillis <= 0) {
            throw new IllegalArgumentException("ttl must be > 0 ms, not " + ttlMillis);
        }
        if (fixedElementBytes < 0) {
            throw new IllegalArgumentException("fixed element length must be >= 0");
        }
    }
}
