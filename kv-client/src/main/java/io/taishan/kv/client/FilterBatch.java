package io.taishan.kv.client;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What {@link KvStore.Filters#fetchFilters} got: per shard, its filter (owned by the caller, as
 * {@link ShardFilter} says) or why there is none. Every shard asked for is in exactly one of the
 * two maps.
 *
 * @param filters by shard
 * @param failures by shard: {@link FilterUnavailableException} (try again later), {@link
 *     FencedException}, or any failure of the call that carried the shard
 */
public record FilterBatch(Map<Integer, ShardFilter> filters, Map<Integer, KvException> failures) {
    public FilterBatch {
        filters = Map.copyOf(filters);
        failures = Map.copyOf(failures);
    }

    /** Refuses leases of several tables, or one shard twice. */
    static void checkLeases(List<ShardLease> leases) {
        Set<Integer> shards = new HashSet<>();
        for (ShardLease lease : leases) {
            if (!lease.table().equals(leases.get(0).table())) {
                throw new IllegalArgumentException(
                        "fetchFilters takes the shards of one table, not of '"
                                + leases.get(0).table()
                                + "' and '"
                                + lease.table()
                                + "'");
            }
            if (!shards.add(lease.shard())) {
                throw new IllegalArgumentException(
                        "fetchFilters names shard " + lease.shard() + " twice");
            }
        }
    }
}
