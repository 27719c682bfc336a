package io.taishan.kv.client;

import io.taishan.bloom.BloomFilter;
import java.util.Objects;

/**
 * A shard's Bloom filter as fetched from the server: an off-heap copy owned by the caller (hand it
 * to {@code LoadingFilter.PendingLoad.complete}, which takes ownership, or {@link #close()} it).
 *
 * @param lease the lease it was fetched under; the copy is of that lease's shard state only
 * @param version the server's filter version ({@link WriteResult#filterVersion} reports the same)
 * @param filter the bits, over {@code KeyHash} hashes of store keys
 */
public record ShardFilter(ShardLease lease, long version, BloomFilter filter)
        implements AutoCloseable {
    public ShardFilter {
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(filter, "filter");
    }

    /** Frees the bits unless ownership moved on; idempotent. */
    @Override
    public void close() {
        filter.close();
    }
}
