package io.taishan.kv.client;

import java.util.List;

/**
 * Server-side expiry of one table's TTL'd states, over every node ({@link
 * KvStore.Admin#describeExpiry}).
 *
 * @param states the registered TTL'd states (a node's view; they agree)
 * @param expiredEntries entries the sweeps deleted since the nodes started
 * @param sweptEntries entries the sweeps looked at since the nodes started
 * @param lastSweepMillis when the latest sweep of the table ended on any node, 0 before the first
 * @param estimatedLiveEntries RocksDB's estimate of the live entries of the table's open shards
 * @param openShards how many shards that estimate covers
 */
public record TableExpiry(
        List<TtlState> states,
        long expiredEntries,
        long sweptEntries,
        long lastSweepMillis,
        long estimatedLiveEntries,
        int openShards) {}
