package io.taishan.kv.client;

/**
 * The server's Bloom filters of leased shards: what a client-side {@code LoadingFilter}
 * (taishan-bloom) loads. Kept apart from {@link KvStore} so that decorators of that interface need
 * not change; {@link GrpcKvStore} implements both.
 *
 * <p>How a client keeps its copy right (the rest is {@code LoadingFilter}'s protocol): call {@code
 * beginLoad()} first, then {@link #fetchFilter}; for a re-fetch, send it only after the writes made
 * before {@code beginLoad()} were acknowledged, since the server's copy contains exactly the writes
 * it acknowledged before the fetch arrived (and possibly some concurrent ones). The server reports
 * its filter version with every write ({@link WriteResult#filterVersion}); a version other than the
 * loaded one means it rebuilt, and a fetch gives a more precise copy. The old copy stays correct.
 */
public interface ShardFilterStore {

    /**
     * A copy of the shard's current filter and its version; blocking, with the client's deadline
     * and retries of an idempotent read. The caller owns the returned filter (off-heap memory).
     *
     * @throws FilterUnavailableException while the server has no filter it can vouch for (not
     *     retried: try again later)
     * @throws FencedException if the lease is stale
     * @throws KvException for the other failures of a data call
     */
    ShardFilter fetchFilter(ShardLease lease);
}
