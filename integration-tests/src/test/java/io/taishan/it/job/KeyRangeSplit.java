package io.taishan.it.job;

import org.apache.flink.api.connector.source.SourceSplit;

/**
 * A range of keys and how far it has been read. Immutable: the reader replaces it as it advances,
 * so a snapshot is simply the current instance.
 */
public final class KeyRangeSplit implements SourceSplit {
    private final int index;
    private final int firstKey;
    private final int keyCount;
    private final int recordsPerKey;
    private final long position;

    public KeyRangeSplit(int index, int firstKey, int keyCount, int recordsPerKey, long position) {
        this.index = index;
        this.firstKey = firstKey;
        this.keyCount = keyCount;
        this.recordsPerKey = recordsPerKey;
        this.position = position;
    }

    @Override
    public String splitId() {
        return Integer.toString(index);
    }

    public int index() {
        return index;
    }

    public int firstKey() {
        return firstKey;
    }

    public int keyCount() {
        return keyCount;
    }

    public int recordsPerKey() {
        return recordsPerKey;
    }

    /** Index of the next record to emit, in [0, keyCount * recordsPerKey]. */
    public long position() {
        return position;
    }

    public long size() {
        return (long) keyCount * recordsPerKey;
    }

    public boolean isFinished() {
        return position >= size();
    }

    public KeyRangeSplit advance() {
        return new KeyRangeSplit(index, firstKey, keyCount, recordsPerKey, position + 1);
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof KeyRangeSplit)) {
            return false;
        }
        KeyRangeSplit that = (KeyRangeSplit) o;
        return index == that.index
                && firstKey == that.firstKey
                && keyCount == that.keyCount
                && recordsPerKey == that.recordsPerKey
                && position == that.position;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(position) * 31 + index;
    }

    @Override
    public String toString() {
        return "KeyRangeSplit{"
                + index
                + ": keys ["
                + firstKey
                + ", "
                + (firstKey + keyCount)
                + "), at "
                + position
                + "/"
                + size()
                + '}';
    }
}
