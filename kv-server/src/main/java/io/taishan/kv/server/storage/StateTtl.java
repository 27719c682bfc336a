package io.taishan.kv.server.storage;

/**
 * The time-to-live of one registered state of a table, and where its values keep the last-access
 * timestamp, as Flink's TTL wrapper writes them (Flink's RocksDB {@code FlinkCompactionFilter}
 * reads the same layouts): an 8-byte big-endian timestamp in milliseconds of the client's TTL
 * clock, first in a value-like state's value, behind the 1-byte null flag of a map entry, and first
 * in each element of a list.
 *
 * @param stateId the state's 4-byte id, the first bytes of each of its keys
 * @param ttlMillis how long a value lives after its last access
 * @param layout where the timestamp is
 * @param fixedElementBytes for a list, the serialized length of one element if every element has
 *     the same one, else 0: a list's elements can only be found without their serializer when they
 *     have a fixed length, so a list of variable-length elements never expires on the server (the
 *     TTL wrapper still drops expired elements when it reads them)
 */
public record StateTtl(int stateId, long ttlMillis, Layout layout, int fixedElementBytes) {

    /** Enough of a value or map entry's first bytes to tell whether it expired. */
    public static final int TIMESTAMP_PREFIX_BYTES = 1 + Long.BYTES;

    /** Where a value keeps its timestamp. */
    public enum Layout {
        /** Value, reducing, aggregating state: the value starts with it. */
        VALUE,
        /** A map entry: {@code [null flag][timestamp][value]}. */
        MAP_ENTRY,
        /** A list: elements joined by ',', each starting with its own. */
        LIST
    }

    public StateTtl {
        if (ttlMillis <= 0) {
            throw new IllegalArgumentException("ttl must be > 0 ms, not " + ttlMillis);
        }
        if (fixedElementBytes < 0) {
            throw new IllegalArgumentException("fixed element length must be >= 0");
        }
    }

    /**
     * Whether the stored value has expired at {@code ttlNow} on the client's TTL clock, as Flink
     * decides it ({@code timestamp + ttl <= now}). A value this cannot parse never expires: the
     * server may keep an expired value, never drop a live one.
     */
    public boolean expired(byte[] value, long ttlNow) {
        switch (layout) {
            case VALUE:
                return value.length >= Long.BYTES && expiredAt(readLong(value, 0), ttlNow);
            case MAP_ENTRY:
                return value.length >= 1 + Long.BYTES
                        && value[0] == 0
                        && expiredAt(readLong(value, 1), ttlNow);
            case LIST:
                return listExpired(value, ttlNow);
            default:
                return false;
        }
    }

    /** Every element expired; the elements' timestamps are not ordered after a merge. */
    private boolean listExpired(byte[] value, long ttlNow) {
        int stride = fixedElementBytes + 1;
        if (fixedElementBytes < Long.BYTES || (value.length + 1) % stride != 0) {
            return false;
        }
        for (int at = 0; at < value.length; at += stride) {
            if (at + fixedElementBytes < value.length && value[at + fixedElementBytes] != ',') {
                return false;
            }
            if (!expiredAt(readLong(value, at), ttlNow)) {
                return false;
            }
        }
        return true;
    }

    private boolean expiredAt(long lastAccess, long ttlNow) {
        // lastAccess + ttl <= ttlNow, without overflow.
        return lastAccess <= ttlNow - ttlMillis;
    }

    private static long readLong(byte[] b, int at) {
        long v = 0;
        for (int i = 0; i < Long.BYTES; i++) {
            v = (v << 8) | (b[at + i] & 0xFF);
        }
        return v;
    }

    /** The TTL that keeps both alive: a change across a restore never expires a value early. */
    StateTtl mergedWith(StateTtl other) {
        if (other.stateId != stateId) {
            throw new IllegalArgumentException("different states");
        }
        if (other.layout != layout) {
            throw KvServerException.invalid(
                    "state "
                            + Integer.toHexString(stateId)
                            + " registered with TTL layouts "
                            + layout
                            + " and "
                            + other.layout);
        }
        int fixed = fixedElementBytes == other.fixedElementBytes ? fixedElementBytes : 0;
        return new StateTtl(stateId, Math.max(ttlMillis, other.ttlMillis), layout, fixed);
    }
}
