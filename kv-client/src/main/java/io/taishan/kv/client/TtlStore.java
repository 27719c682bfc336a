package io.taishan.kv.client;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Server-side expiry of TTL'd state: a backend tells the server which of its table's states have a
 * TTL, and keeps reporting its TTL clock for the shards it owns; the server deletes expired entries
 * in the background by that clock, never its own. Kept apart from {@link KvStore} so that
 * decorators of that interface need not change; {@link GrpcKvStore} implements both.
 */
public interface TtlStore {

    /** Registers states with a TTL on every node (idempotent; a longer TTL wins). */
    void registerTtlStates(String table, List<TtlState> states);

    /**
     * Reports the owner's TTL time for its shards (all of one table); fails with {@link
     * FencedException} for a stale lease.
     */
    CompletableFuture<Void> reportTtlTime(List<ShardLease> leases, long ttlTimeMillis);
}
