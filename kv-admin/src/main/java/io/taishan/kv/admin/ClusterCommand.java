package io.taishan.kv.admin;

import io.taishan.kv.client.ClusterReport;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.client.UnownedShards;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code cluster}: every node by name and address, whether it answers and with which view of the
 * cluster; then, when they all agree, which shards of each table each node owns, as compact ranges,
 * and the shards a node still holds without owning them (left behind by a change of the nodes). The
 * nodes come from {@link KvStores#describeCluster}, which reports a cluster that a store would
 * refuse to connect to (a node down, a change half done); the tables need a connected store. Exits
 * 1 unless every node answers with the same view.
 */
final class ClusterCommand {
    private final KvClientConfig config;
    private final PrintStream out;

    ClusterCommand(KvClientConfig config, PrintStream out) {
        this.config = config;
        this.out = out;
    }

    int run() {
        ClusterReport report = KvStores.describeCluster(config);
        ClusterView view = report.view();
        out.println(
                "view "
                        + view.fingerprintHex()
                        + ": "
                        + view.size()
                        + " node(s), "
                        + (report.agreed()
                                ? "every node answers with it"
                                : "NOT every node answers with it"));
        TextTable nodes = new TextTable("node", "address", "reachable", "view", "problem");
        for (ClusterReport.NodeReport node : report.nodes()) {
            nodes.row(
                    node.node().name(),
                    node.node().address(),
                    node.reachable() ? "yes" : "no",
                    node.view() == null ? "-" : node.view().fingerprintHex(),
                    problem(node, view));
        }
        nodes.print(out);
        if (!report.agreed()) {
            out.println(
                    "per-table placement left out: the nodes must all answer with one view (give"
                            + " every node the same cluster.nodes; docs/operations.md, Changing the"
                            + " cluster)");
            return AdminCommands.EXIT_FAILED;
        }
        try (KvStore kv = KvStores.connect(config)) {
            out.println();
            printTables(kv, kv.admin().orElseThrow().clusterView());
        }
        return AdminCommands.EXIT_OK;
    }

    private static String problem(ClusterReport.NodeReport node, ClusterView expected) {
        if (!node.problem().isEmpty()) {
            return node.problem();
        }
        if (node.view() != null && !node.view().equals(expected)) {
            return "its view: " + node.view();
        }
        return "";
    }

    private void printTables(KvStore kv, ClusterView view) {
        List<TableInfo> tables = new ArrayList<>(kv.listTables());
        tables.sort(Comparator.comparing(TableInfo::name));
        TextTable table =
                new TextTable(
                        "table", ">shards", "node", ">owned", "owned shards", "held, not owned");
        for (TableInfo info : tables) {
            Map<String, List<Integer>> owned = new HashMap<>();
            for (int shard = 0; shard < info.shardCount(); shard++) {
                owned.computeIfAbsent(
                                view.owner(shard, info.shardCount()).name(), n -> new ArrayList<>())
                        .add(shard);
            }
            Map<String, List<Integer>> unowned = new HashMap<>();
            for (UnownedShards u : kv.admin().orElseThrow().unownedShards(info.name())) {
                unowned.put(u.node().name(), u.shards());
            }
            boolean first = true;
            for (ClusterNode node : view.nodes()) {
                List<Integer> mine = owned.getOrDefault(node.name(), List.of());
                table.row(
                        first ? info.name() : "",
                        first ? String.valueOf(info.shardCount()) : "",
                        node.name(),
                        mine.size(),
                        Formats.ranges(mine),
                        Formats.ranges(unowned.getOrDefault(node.name(), List.of())));
                first = false;
            }
        }
        table.print(out);
        out.println(tables.size() + " table(s)");
    }
}
