package io.taishan.kv.server.storage;

import java.time.Duration;
import java.util.Objects;

/**
 * How long a node keeps the local copy of a snapshot that is also in checkpoint storage (see {@link
 * SnapshotCatalog#evict}). Such a copy only makes a restore on this node metadata-only; without it
 * the restore downloads. Snapshots that never reached checkpoint storage are not a cache and are
 * not bounded by this.
 *
 * @param keepPerShard the newest this many uploaded snapshots of each shard keep their local copy;
 *     at least 1, so that an upload of the snapshot before the newest (concurrent checkpoints)
 *     still finds it
 * @param maxAge older local copies go whatever their rank (a stopped job's table ends with none)
 */
public record SnapshotCacheOptions(int keepPerShard, Duration maxAge) {
    public static final SnapshotCacheOptions DEFAULTS =
            new SnapshotCacheOptions(2, Duration.ofHours(2));

    public SnapshotCacheOptions {
        Objects.requireNonNull(maxAge, "maxAge");
        if (keepPerShard < 1) {
            throw new IllegalArgumentException(
                    "durable.local-snapshots-per-shard must be >= 1, not " + keepPerShard);
        }
        if (maxAge.isNegative() || maxAge.isZero()) {
            throw new IllegalArgumentException(
                    "durable.local-snapshot-max-age must be > 0, not " + maxAge);
        }
    }
}
