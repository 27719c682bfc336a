package io.taishan.backend.write;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import javax.annotation.Nullable;

/**
 * One index over every write the subtask has made that the server has not acknowledged yet: for
 * each key, what those writes do to it, so a read needs one lookup whatever the number of batches
 * waiting or in flight.
 *
 * <p>Each entry is the combined effect of the key's pending ops: a value (a put, possibly extended
 * by later appends), a delete, or appends onto whatever the server holds. Pending range deletes are
 * kept beside the entries; a range delete removes the entries inside it at once (they are older),
 * so an entry is always newer than every pending range that covers it.
 *
 * <p>When the server acknowledges a batch (batches are acknowledged in the order they were sent),
 * the server holds everything that batch did: an entry whose last op was in it goes, appends onto
 * the server's value lose the operands it carried (the server's value has them now), and its range
 * deletes go.
 *
 * <p>Cost: a point lookup is one hash lookup (O(1)) plus a check against the pending range deletes
 * (usually none: a map state's {@code clear()} until its batch is acknowledged); a write is one
 * hash lookup, and for a key not pending yet one hash insertion and one list append. Range queries
 * (scans merging pending writes into remote pages instead of draining the queue, range deletes)
 * need the entries sorted by unsigned key bytes: a tree holds those, and the entries added since
 * the last range query go into it when the next one comes. A key acknowledged before any range
 * query needed it never enters the tree, so a subtask that only writes and reads points (value
 * updates, list appends, map puts) pays no tree insertion: with a tree insertion per write, 73% of
 * a value update's time on the task thread went to this index, most of it the tree's key
 * comparisons. Not thread-safe: the write queue guards it with its lock.
 */
public final class PendingWrites {

    /** What the pending writes do to one key. */
    public enum Effect {
        /** No pending write touches the key: the server's value is current. */
        NONE,
        /** The key has this value. */
        VALUE,
        /** The key has no value. */
        ABSENT,
        /** The server's value, with these operands appended. */
        APPENDS
    }

    /** A lookup's answer. */
    public record Lookup(Effect effect, @Nullable byte[] bytes, long oldestSegment) {
        static final Lookup NONE = new Lookup(Effect.NONE, null, Long.MAX_VALUE);
        static final Lookup ABSENT = new Lookup(Effect.ABSENT, null, Long.MAX_VALUE);
    }

    private static final byte DELIMITER = ',';

    private final HashMap<Key, Entry> byKey = new HashMap<>();

    /** Live entries that a range query has needed, in key order. */
    private final TreeMap<byte[], Entry> sorted = new TreeMap<>(Arrays::compareUnsigned);

    /** Entries added since the last range query; those acknowledged since are marked dropped. */
    private final ArrayList<Entry> unsorted = new ArrayList<>();

    private final List<RangeDelete> ranges = new ArrayList<>(0);

    /** Reused for lookups, which all run under the queue's lock. */
    private final Key probe = new Key();

    /**
     * Returns the key's entry, for the segment to remember: its acknowledgement then reaches the
     * entry without a second lookup.
     */
    Entry put(byte[] key, byte[] value, long segment) {
        Entry entry = entryFor(key);
        entry.setValue(value, segment);
        return entry;
    }

    Entry delete(byte[] key, long segment) {
        Entry entry = entryFor(key);
        entry.setAbsent(segment);
        return entry;
    }

    Entry append(byte[] key, byte[] operand, long segment) {
        Entry entry = existing(key);
        if (entry == null) {
            entry = entryFor(key);
            if (coveredByRange(key)) {
                entry.setValue(operand, segment);
            } else {
                entry.startAppends(operand, segment);
            }
        } else {
            entry.append(operand, segment);
        }
        return entry;
    }

    /** {@code end} empty means to the end of the key space. */
    void deleteRange(byte[] begin, byte[] end, long segment) {
        sortAdded();
        NavigableMap<byte[], Entry> inside =
                end.length == 0
                        ? sorted.tailMap(begin, true)
                        : sorted.subMap(begin, true, end, false);
        for (Iterator<Entry> it = inside.values().iterator(); it.hasNext(); ) {
            Entry entry = it.next();
            byKey.remove(entry.key);
            entry.indexed = false;
            it.remove();
        }
        ranges.add(new RangeDelete(begin, end, segment));
    }

    Lookup lookup(byte[] key) {
        probe.set(key);
        Entry entry = byKey.get(probe);
        probe.clear();
        if (entry != null) {
            return entry.lookup();
        }
        return coveredByRange(key) ? Lookup.ABSENT : Lookup.NONE;
    }

    /** The entries with keys in {@code [start, end)} ({@code end} empty: unbounded), in order. */
    NavigableMap<byte[], Entry> entries(byte[] start, byte[] end) {
        sortAdded();
        return end.length == 0
                ? sorted.tailMap(start, true)
                : sorted.subMap(start, true, end, false);
    }

    /**
     * The pending range deletes that overlap {@code [start, end)} ({@code end} empty: unbounded).
     */
    List<byte[][]> rangesOverlapping(byte[] start, byte[] end) {
        List<byte[][]> overlapping = new ArrayList<>(0);
        for (RangeDelete range : ranges) {
            boolean startsBeforeEnd =
                    end.length == 0 || Arrays.compareUnsigned(range.begin, end) < 0;
            boolean endsAfterStart =
                    range.end.length == 0 || Arrays.compareUnsigned(range.end, start) > 0;
            if (startsBeforeEnd && endsAfterStart) {
                overlapping.add(new byte[][] {range.begin, range.end});
            }
        }
        return overlapping;
    }

    /** Whether a pending range delete covers {@code key} (no entry may be newer: check first). */
    boolean coveredByRange(byte[] key) {
        for (int i = 0; i < ranges.size(); i++) {
            if (ranges.get(i).covers(key)) {
                return true;
            }
        }
        return false;
    }

    /** The server has applied every segment up to and including {@code segment}. */
    void acknowledged(long segment, List<Entry> entriesOfSegment) {
        for (Entry entry : entriesOfSegment) {
            // Gone already: acknowledged for an earlier op of this segment, or removed by a range
            // delete (a newer entry for the same bytes is then in the list of its own segment).
            if (entry.indexed && entry.acknowledged(segment)) {
                byKey.remove(entry.key);
                entry.indexed = false;
                if (entry.inTree) {
                    sorted.remove(entry.key.bytes);
                } else {
                    entry.dropped = true;
                }
            }
        }
        // Writes without range queries: keep the list from holding mostly dropped entries.
        if (unsorted.size() > 1024 && unsorted.size() > 2 * byKey.size()) {
            unsorted.removeIf(e -> e.dropped);
        }
        ranges.removeIf(range -> range.segment <= segment);
    }

    int size() {
        return byKey.size();
    }

    /** Entries in the sorted index; for tests. */
    int sortedSize() {
        return sorted.size();
    }

    @Nullable
    private Entry existing(byte[] key) {
        probe.set(key);
        Entry entry = byKey.get(probe);
        probe.clear();
        return entry;
    }

    private Entry entryFor(byte[] key) {
        Entry entry = existing(key);
        if (entry == null) {
            entry = new Entry(new Key(key));
            byKey.put(entry.key, entry);
            unsorted.add(entry);
        }
        return entry;
    }

    /** Puts the entries added since the last range query into the tree. */
    private void sortAdded() {
        for (int i = 0; i < unsorted.size(); i++) {
            Entry entry = unsorted.get(i);
            if (!entry.dropped) {
                sorted.put(entry.key.bytes, entry);
                entry.inTree = true;
            }
        }
        unsorted.clear();
    }

    static byte[] join(byte[] left, byte[] right) {
        byte[] joined = Arrays.copyOf(left, left.length + 1 + right.length);
        joined[left.length] = DELIMITER;
        System.arraycopy(right, 0, joined, left.length + 1, right.length);
        return joined;
    }

    /** Key bytes with value semantics; the probe is mutable, stored keys never change. */
    static final class Key {
        private byte[] bytes;
        private int hash;

        private Key() {}

        Key(byte[] bytes) {
            set(bytes);
        }

        private void set(byte[] newBytes) {
            bytes = newBytes;
            hash = Arrays.hashCode(newBytes);
        }

        private void clear() {
            bytes = null;
        }

        byte[] bytes() {
            return bytes;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key other
                    && hash == other.hash
                    && Arrays.equals(bytes, other.bytes);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    /** The combined effect of one key's pending ops. */
    static final class Entry {
        final Key key;
        private Effect effect;
        @Nullable private byte[] value;
        private long lastSegment;

        /** For {@link Effect#APPENDS}: the operands and the segment of each, oldest first. */
        @Nullable private List<byte[]> operands;

        @Nullable private long[] operandSegments;

        /** In {@code sorted}; otherwise in {@code unsorted}. */
        private boolean inTree;

        /** Acknowledged (no longer in {@code byKey}) before it reached the tree. */
        private boolean dropped;

        /** In {@code byKey}: neither acknowledged nor removed by a range delete yet. */
        private boolean indexed = true;

        private Entry(Key key) {
            this.key = key;
        }

        byte[] key() {
            return key.bytes;
        }

        Effect effect() {
            return effect;
        }

        private void setValue(byte[] newValue, long segment) {
            effect = Effect.VALUE;
            value = newValue;
            operands = null;
            operandSegments = null;
            lastSegment = segment;
        }

        private void setAbsent(long segment) {
            effect = Effect.ABSENT;
            value = null;
            operands = null;
            operandSegments = null;
            lastSegment = segment;
        }

        private void startAppends(byte[] operand, long segment) {
            effect = Effect.APPENDS;
            value = null;
            operands = new ArrayList<>(2);
            operandSegments = new long[2];
            operands.add(operand);
            operandSegments[0] = segment;
            lastSegment = segment;
        }

        private void append(byte[] operand, long segment) {
            switch (effect) {
                case VALUE -> value = join(value, operand);
                case ABSENT -> value = operand;
                case APPENDS -> {
                    if (operands.size() == operandSegments.length) {
                        operandSegments = Arrays.copyOf(operandSegments, operands.size() * 2);
                    }
                    operandSegments[operands.size()] = segment;
                    operands.add(operand);
                }
                default -> throw new IllegalStateException(effect.name());
            }
            if (effect == Effect.ABSENT) {
                effect = Effect.VALUE;
            }
            lastSegment = segment;
        }

        Lookup lookup() {
            return switch (effect) {
                case VALUE -> new Lookup(Effect.VALUE, value, lastSegment);
                case ABSENT -> Lookup.ABSENT;
                case APPENDS -> new Lookup(Effect.APPENDS, joinedOperands(), operandSegments[0]);
                default -> throw new IllegalStateException(effect.name());
            };
        }

        private byte[] joinedOperands() {
            int length = operands.size() - 1;
            for (byte[] operand : operands) {
                length += operand.length;
            }
            byte[] joined = new byte[length];
            int at = 0;
            for (int i = 0; i < operands.size(); i++) {
                if (i > 0) {
                    joined[at++] = DELIMITER;
                }
                byte[] operand = operands.get(i);
                System.arraycopy(operand, 0, joined, at, operand.length);
                at += operand.length;
            }
            return joined;
        }

        /** Drops what the server now has; true when nothing is left pending. */
        private boolean acknowledged(long segment) {
            if (lastSegment <= segment) {
                return true;
            }
            if (effect == Effect.APPENDS) {
                int applied = 0;
                while (applied < operands.size() && operandSegments[applied] <= segment) {
                    applied++;
                }
                if (applied > 0) {
                    operands.subList(0, applied).clear();
                    operandSegments =
                            Arrays.copyOfRange(operandSegments, applied, applied + operands.size());
                }
            }
            return false;
        }

        /** The key's value given the server's ({@code base}, null if absent). */
        @Nullable
        byte[] applyTo(@Nullable byte[] base) {
            return switch (effect) {
                case VALUE -> value;
                case ABSENT -> null;
                case APPENDS -> base == null ? joinedOperands() : join(base, joinedOperands());
                default -> throw new IllegalStateException(effect.name());
            };
        }

        /** For {@link Effect#APPENDS}: the segment of the oldest operand still pending. */
        long oldestSegment() {
            return effect == Effect.APPENDS ? operandSegments[0] : lastSegment;
        }
    }

    /** A pending {@code [begin, end)} delete; {@code end} empty is unbounded. */
    private record RangeDelete(byte[] begin, byte[] end, long segment) {
        boolean covers(byte[] key) {
            return Arrays.compareUnsigned(key, begin) >= 0
                    && (end.length == 0 || Arrays.compareUnsigned(key, end) < 0);
        }
    }
}
