package io.taishan.kv.client;

import io.taishan.kv.protocol.ClusterView;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import javax.annotation.Nullable;

/**
 * Which node a shard's calls go to: the owner under the client's current view of the cluster
 * ({@link ClusterView#ownerOf}, over the table's shard count, which it caches per table and learns
 * by describing the table when unknown). One node needs no shard count at all. The view is replaced
 * whole when the cluster changed ({@link #install}); a call routed just before reaches the old
 * owner, which refuses it if it no longer owns the shard. Thread-safe.
 *
 * <p>A lease is bound to the node that handed it out ({@link ShardLease#node()}): epochs come from
 * one counter per node, so an epoch of one node may equal a live lease's epoch on another, and a
 * lease taken before the view changed must never be presented to the shard's new owner. Such a call
 * is refused here, before anything is sent.
 */
final class ShardRouter {
    /** A view and the client's nodes for it, in the view's name order. */
    record Routing(ClusterView view, List<KvNode> nodes) {
        Routing {
            nodes = List.copyOf(nodes);
        }
    }

    private volatile Routing routing;
    private final Function<String, Optional<TableInfo>> describe;
    private final Map<String, TableInfo> tables = new ConcurrentHashMap<>();

    /**
     * @param describe asks the cluster for a table (and must {@link #remember} it)
     */
    ShardRouter(Routing routing, Function<String, Optional<TableInfo>> describe) {
        this.routing = routing;
        this.describe = describe;
    }

    Routing routing() {
        return routing;
    }

    /** From now on calls are routed by this view. */
    void install(Routing newRouting) {
        this.routing = newRouting;
    }

    ClusterView view() {
        return routing.view();
    }

    List<KvNode> nodes() {
        return routing.nodes();
    }

    /** The node that decides whether a table exists: the first in name order. */
    KvNode first() {
        return routing.nodes().get(0);
    }

    boolean needsShardCounts() {
        return routing.nodes().size() > 1;
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
        Routing r = routing;
        if (r.nodes().size() == 1) {
            return r.nodes().get(0);
        }
        return nodeFor(r, tableInfo(table), shard);
    }

    /** The owner of a lease's shard, refused when another node handed out the lease. */
    KvNode nodeFor(ShardLease lease) {
        Routing r = routing;
        KvNode node =
                r.nodes().size() == 1
                        ? r.nodes().get(0)
                        : nodeFor(r, tableInfo(lease.table()), lease.shard());
        checkLease(lease, node, r);
        return node;
    }

    /**
     * An out-of-range shard goes to the first node, so that the server rejects it with its own
     * error. A null table (one node) routes everything to that node.
     */
    KvNode nodeFor(@Nullable TableInfo table, int shard) {
        return nodeFor(routing, table, shard);
    }

    /** The owner of the lease's shard, refused when another node handed out the lease. */
    KvNode nodeFor(@Nullable TableInfo table, ShardLease lease) {
        Routing r = routing;
        KvNode node = nodeFor(r, table, lease.shard());
        checkLease(lease, node, r);
        return node;
    }

    private static KvNode nodeFor(Routing r, @Nullable TableInfo table, int shard) {
        if (table == null || shard >= table.shardCount()) {
            return r.nodes().get(0);
        }
        return r.nodes().get(r.view().ownerOf(shard, table.shardCount()));
    }

    private static void checkLease(ShardLease lease, KvNode owner, Routing r) {
        if (!lease.node().isEmpty() && !lease.node().equals(owner.name())) {
            throw new ShardNotOwnedException(
                    "the lease of table '"
                            + lease.table()
                            + "' shard "
                            + lease.shard()
                            + " was taken on "
                            + lease.node()
                            + ", but under the cluster's view "
                            + r.view().fingerprintHex()
                            + " ("
                            + r.view().nameList()
                            + ") "
                            + owner.name()
                            + " owns the shard: the cluster changed since; take the shard again"
                            + " (open or restore it)",
                    owner.address(),
                    null);
        }
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

    /** The node of the current view at this address, if any. */
    @Nullable
    KvNode nodeAt(@Nullable String address) {
        for (KvNode node : routing.nodes()) {
            if (node.address().equals(address)) {
                return node;
            }
        }
        return null;
    }
}
