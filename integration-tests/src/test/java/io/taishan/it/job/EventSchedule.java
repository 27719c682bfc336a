package io.taishan.it.job;

import java.io.Serializable;

/**
 * The whole input as a pure function: {@code keyCount} keys, {@code recordsPerKey} records each,
 * split into {@code splitCount} key ranges. Within a split the records go round by round (sequence
 * number 0 of every key of the range, then 1, ...), so every key's records come from one split, in
 * sequence order, with event time growing monotonically inside the split. That makes the arrival
 * order per key, and with it every piece of per-key state, independent of parallelism, scheduling
 * and restores.
 */
public final class EventSchedule implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Event-time distance between two sequence numbers of one key. */
    public static final long TIME_STEP = 10;

    private final int keyCount;
    private final int recordsPerKey;
    private final int splitCount;

    public EventSchedule(int keyCount, int recordsPerKey, int splitCount) {
        if (keyCount < splitCount || splitCount < 1 || recordsPerKey < 1) {
            throw new IllegalArgumentException(
                    "need keyCount >= splitCount >= 1 and recordsPerKey >= 1");
        }
        this.keyCount = keyCount;
        this.recordsPerKey = recordsPerKey;
        this.splitCount = splitCount;
    }

    public int keyCount() {
        return keyCount;
    }

    public int recordsPerKey() {
        return recordsPerKey;
    }

    public int splitCount() {
        return splitCount;
    }

    public long totalRecords() {
        return (long) keyCount * recordsPerKey;
    }

    /** The initial, unread split of the given index. */
    public KeyRangeSplit split(int splitIndex) {
        int firstKey = (int) ((long) keyCount * splitIndex / splitCount);
        int endKey = (int) ((long) keyCount * (splitIndex + 1) / splitCount);
        return new KeyRangeSplit(splitIndex, firstKey, endKey - firstKey, recordsPerKey, 0);
    }

    public static Event event(KeyRangeSplit split, long position) {
        int seq = (int) (position / split.keyCount());
        long key = split.firstKey() + position % split.keyCount();
        return new Event(key, seq, value(key, seq), seq * TIME_STEP);
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof EventSchedule)) {
            return false;
        }
        EventSchedule that = (EventSchedule) o;
        return keyCount == that.keyCount
                && recordsPerKey == that.recordsPerKey
                && splitCount == that.splitCount;
    }

    @Override
    public int hashCode() {
        return (keyCount * 31 + recordsPerKey) * 31 + splitCount;
    }

    @Override
    public String toString() {
        return keyCount + " keys x " + recordsPerKey + " records in " + splitCount + " splits";
    }

    /** A deterministic, well-mixed value in [0, 1000). */
    public static long value(long key, int seq) {
        long h = key * 0x9E3779B97F4A7C15L + seq * 0xC2B2AE3D27D4EB4FL;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 32;
        return Math.floorMod(h, 1000L);
    }
}
