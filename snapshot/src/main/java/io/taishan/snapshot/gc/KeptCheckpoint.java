package io.taishan.snapshot.gc;

import io.taishan.snapshot.ShardSnapshotRef;
import java.util.List;

/**
 * A retained checkpoint or savepoint that an operator keeps, and the remote shard snapshots that
 * restoring it needs.
 *
 * @param pointer the path as given (a checkpoint or savepoint directory, or its {@code _metadata})
 * @param location the directory it resolved to, as Flink names it (its external pointer)
 * @param taishanStates keyed state handles that are Taishan manifests
 * @param otherStates keyed state handles that reference no remote snapshot: canonical savepoint
 *     files, or another backend's state
 * @param references distinct, by table, shard and snapshot id
 */
public record KeptCheckpoint(
        String pointer,
        String location,
        long checkpointId,
        Kind kind,
        int taishanStates,
        int otherStates,
        List<ShardSnapshotRef> references) {

    public KeptCheckpoint {
        references = List.copyOf(references);
    }

    /** What the metadata says it is. */
    public enum Kind {
        CHECKPOINT("checkpoint"),
        NATIVE_SAVEPOINT("native savepoint"),
        CANONICAL_SAVEPOINT("canonical savepoint"),
        /** Metadata of format version 3, as older Flink versions write it, does not say. */
        UNKNOWN("checkpoint or savepoint");

        private final String words;

        Kind(String words) {
            this.words = words;
        }

        /** How the admin CLI names it. */
        public String words() {
            return words;
        }
    }
}
