package io.taishan.kv.server.storage;

import io.taishan.bloom.RebuildingFilter;
import java.io.IOException;
import java.io.OutputStream;

/**
 * A point-in-time copy of a shard's filter that lives while it is written to a file or sent to a
 * client: owned by whoever took it, counted as transient filter memory of the node until closed.
 */
public final class FilterCopy implements AutoCloseable {
    private final RebuildingFilter.Snapshot snapshot;
    private final NodeFilters filters;
    private final long bytes;
    private boolean closed;

    FilterCopy(RebuildingFilter.Snapshot snapshot, NodeFilters filters) {
        this.snapshot = snapshot;
        this.filters = filters;
        this.bytes = snapshot.filter().sizeBytes();
        filters.transientAdded(bytes);
    }

    RebuildingFilter.Snapshot snapshot() {
        return snapshot;
    }

    public long version() {
        return snapshot.version();
    }

    /** Bytes of the BloomFilter form that {@link #writeFilterTo} writes (what a client loads). */
    public long serializedFilterBytes() {
        return snapshot.filter().serializedSizeBytes();
    }

    /** The BloomFilter form (taishan-bloom's {@code BloomFilter.readFrom} reads it). */
    public void writeFilterTo(OutputStream out) throws IOException {
        snapshot.filter().writeTo(out);
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            snapshot.close();
            filters.transientReleased(bytes);
        }
    }
}
