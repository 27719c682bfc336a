package io.taishan.backend.write;

import io.taishan.backend.write.PendingWrites.Effect;
import java.util.Arrays;
import java.util.List;
import javax.annotation.Nullable;

/**
 * A copy of what the unacknowledged writes do to one key range, taken at one moment: the entries in
 * key order and the range deletes that overlap it. A scan merges it into the server's page of the
 * same range, as RocksDB's {@code WriteBatchWithIndex} iterator merges a batch into its base.
 *
 * @param items the keys with pending writes, ascending by unsigned bytes
 * @param rangeDeletes pending {@code {begin, end}} deletes overlapping the range; every item is
 *     newer than all of them
 * @param coveredEnd the items are every pending key below this (exclusive; empty: unbounded): less
 *     than the range's end when there were more than a scan page's worth
 */
public record PendingRange(List<Item> items, List<byte[][]> rangeDeletes, byte[] coveredEnd) {

    /**
     * One key's pending effect: {@code bytes} is the value for {@link Effect#VALUE}, the joined
     * operands for {@link Effect#APPENDS}, null for {@link Effect#ABSENT}.
     */
    public record Item(byte[] key, Effect effect, @Nullable byte[] bytes, long oldestSegment) {
        /** The key's value given the server's {@code base} (null: absent). */
        @Nullable
        public byte[] applyTo(@Nullable byte[] base) {
            return switch (effect) {
                case VALUE -> bytes;
                case ABSENT -> null;
                case APPENDS -> base == null ? bytes : PendingWrites.join(base, bytes);
                default -> throw new IllegalStateException(effect.name());
            };
        }
    }

    /** Whether a remote key without a pending item is deleted by a pending range delete. */
    public boolean deletedByRange(byte[] key) {
        for (byte[][] range : rangeDeletes) {
            if (Arrays.compareUnsigned(key, range[0]) >= 0
                    && (range[1].length == 0 || Arrays.compareUnsigned(key, range[1]) < 0)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The oldest segment any pending append in the range still waits for (Long.MAX_VALUE if none):
     * a server page read while that segment was in flight may or may not hold those operands.
     */
    public long oldestAppendSegment() {
        long oldest = Long.MAX_VALUE;
        for (Item item : items) {
            if (item.effect() == Effect.APPENDS) {
                oldest = Math.min(oldest, item.oldestSegment());
            }
        }
        return oldest;
    }
}
