package io.taishan.backend.snapshot;

/** The highest snapshot id a backend asked for; only the task thread touches it. */
public final class SnapshotIds {
    private long highest = Long.MIN_VALUE;

    /** Records {@code snapshotId}; false if this backend asked for it (or a higher one) before. */
    boolean isNew(long snapshotId) {
        boolean isNew = snapshotId > highest;
        highest = Math.max(highest, snapshotId);
        return isNew;
    }
}
