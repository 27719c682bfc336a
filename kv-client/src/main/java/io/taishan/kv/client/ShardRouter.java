package io.taishan.kv.client;

import io.taishan.kv.protocol.ShardMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import javax.annotation.Nullable;

/**
 * Which node a shard's calls go to: {@link ShardMap} over the table's shard count, which it caches
 * per table and learns by describing the table when unknown. One node needs no shard count at all.
 * Thread-safe.
 */
final class ShardRouter {
    private final List<KvNode> nodes;
    private final Function<String, Optional<TableInfo>> describe;
    private final Map<String, TableInfo> tables = new ConcurrentHashMap<>();

    /**
     * @param describe asks the cluster for a table (and must {@link #remember} it)
     */
    ShardRouter(List<KvNode> nodes, Function<String, Optional<TableInfo>> describe) {
        this.nodes = List.copyOf(nodes);
        this.describe = describe;
    }

    List<KvNode> nodes() {
        return nodes;
    }

    KvNode first() {
        return nodes.get(0);
    }

    boolean needsShardCounts() {
        return nodes.size() > 1;
    }

    void remember(TableInfo table) {
        tables.put(table.name(), table);
    }

    /**
     * After the server objected: the cached shard count may be stale (table dropped, recreated).
     */
    void forget(String table) {
        tables.remove(table);
    }

    @Nullable
    TableInfo known(String table) {
        return tables.get(table);
    }

    KvNode nodeFor(String table, int shard) {
        if (!needsShardCounts()) {
            return first();
        }
        return nodeFor(tableInfo(table), shard);
    }

    /**
     * An out-of-range shard goes to node 0, so that the server rejects it with its own error. A
     * null table (one node) routes everything to node 0.
     */
    KvNode nodeFor(@Nullable TableInfo table, int shard) {
        if (table == null || shard >= table.shardCount()) {
            return first();
        }
        return nodes.get(ShardMap.nodeOf(shard, table.shardCount(), nodes.size()));
    }

    /** The cached table, or the one described now; null when one node needs none. */
    @Nullable
    TableInfo tableInfo(String table) {
        if (!needsShardCounts()) {
            return null;
        }
        TableInfo info = tables.get(table);
        if (info != null) {
            return info;
        }
        return describe.apply(table)
                .orElseThrow(
                        () ->
                                new TableNotFoundException(
                                        "table '" + table + "' does not exist",
                                        first().address(),
                                        null));
    }
}
