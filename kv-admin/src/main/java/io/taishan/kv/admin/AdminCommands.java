package io.taishan.kv.admin;

import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.NodeHealth;
import io.taishan.kv.client.ShardStatus;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableExpiry;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.client.TtlState;
import io.taishan.kv.protocol.ClusterView;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import javax.annotation.Nullable;

/**
 * The commands, each through the public client API only. Each returns its exit code; what cannot be
 * done is thrown as {@link AdminException}.
 */
final class AdminCommands {
    static final int EXIT_OK = 0;
    static final int EXIT_FAILED = 1;
    static final int EXIT_NOT_CONFIRMED = 3;

    private final KvStore kv;
    private final KvStore.Admin admin;
    private final PrintStream out;

    AdminCommands(KvStore kv, PrintStream out) {
        this.kv = kv;
        // The client of KvStores.connect has every facet.
        this.admin = kv.admin().orElseThrow();
        this.out = out;
    }

    int run(AdminArgs args) {
        return switch (args.command()) {
            case HEALTH -> health();
            case CLUSTER -> throw new IllegalStateException("cluster runs before a store connects");
            case TABLES -> tables();
            case DESCRIBE -> describe(args.table());
            case SNAPSHOTS -> snapshots(args.table(), args.shard());
            case DROP_SNAPSHOT ->
                    dropSnapshot(args.table(), args.shardOperand(), args.snapshotId(), args.yes());
            case DROP_SNAPSHOTS_BELOW ->
                    dropSnapshotsBelow(args.table(), args.snapshotId(), args.yes());
            case DROP_TABLE -> dropTable(args.table(), args.yes());
            case GC -> new GcCommand(kv, out, args.gc()).run(args.yes());
        };
    }

    /** Exits 1 when some node is not serving, so that scripts can use it as a probe. */
    int health() {
        List<NodeHealth> nodes = kv.health();
        TextTable table =
                new TextTable(
                        "node",
                        "address",
                        "status",
                        ">tables",
                        ">open shards",
                        "uptime",
                        "version",
                        ">filter memory",
                        ">filter limit",
                        ">rebuilds");
        boolean allServing = true;
        for (NodeHealth node : nodes) {
            allServing &= node.isServing();
            table.row(
                    node.name(),
                    node.address(),
                    node.status(),
                    node.tables(),
                    node.openShards(),
                    node.isServing() ? Formats.duration(node.uptimeMillis()) : "-",
                    node.version().isEmpty() ? "-" : node.version(),
                    node.isServing() ? Formats.size(node.filterBytes()) : "-",
                    node.isServing() ? Formats.size(node.filterLimitBytes()) : "-",
                    node.isServing() ? node.filterRebuilds() : "-");
        }
        table.print(out);
        return allServing ? EXIT_OK : EXIT_FAILED;
    }

    int tables() {
        List<TableInfo> tables = new ArrayList<>(kv.listTables());
        tables.sort(Comparator.comparing(TableInfo::name));
        TextTable table =
                new TextTable(
                        "table", ">shards", "created", ">snapshots", ">pinned", ">snapshot size");
        for (TableInfo info : tables) {
            SnapshotTotals totals = SnapshotTotals.of(kv.listSnapshots(info.name()));
            table.row(
                    info.name(),
                    info.shardCount(),
                    Formats.instant(info.createdAtMillis()),
                    totals.count(),
                    totals.pinned(),
                    Formats.size(totals.bytes()));
        }
        table.print(out);
        out.println(tables.size() + " table(s)");
        return EXIT_OK;
    }

    int describe(String name) {
        TableInfo info = table(name);
        List<SnapshotInfo> snapshots = kv.listSnapshots(name);
        Map<Integer, ShardStatus> statuses = new TreeMap<>();
        for (ShardStatus status : admin.describeShards(name)) {
            statuses.put(status.shard(), status);
        }
        ClusterView view = admin.clusterView();
        out.println("table    " + info.name());
        out.println("shards   " + info.shardCount());
        out.println("created  " + Formats.instant(info.createdAtMillis()));
        out.println();
        TextTable table =
                new TextTable(
                        ">shard",
                        "node",
                        ">snapshots",
                        ">pinned",
                        ">oldest id",
                        ">newest id",
                        ">snapshot size",
                        "filter",
                        ">version",
                        ">memory",
                        ">saved",
                        ">est. fpp");
        List<String> reasons = new ArrayList<>();
        for (int shard = 0; shard < info.shardCount(); shard++) {
            int s = shard;
            SnapshotTotals totals =
                    SnapshotTotals.of(snapshots.stream().filter(i -> i.shard() == s).toList());
            ShardStatus status = statuses.get(shard);
            table.row(
                    shard,
                    view.owner(shard, info.shardCount()).name(),
                    totals.count(),
                    totals.pinned(),
                    totals.count() == 0 ? "-" : totals.oldestId(),
                    totals.count() == 0 ? "-" : totals.newestId(),
                    Formats.size(totals.bytes()),
                    filterState(status),
                    status != null && status.filterState() == ShardStatus.FilterState.AVAILABLE
                            ? status.filterVersion()
                            : "-",
                    status == null || !status.open()
                            ? "-"
                            : Formats.size(status.filterMemoryBytes()),
                    status == null || status.filterSavedBytes() == 0
                            ? "-"
                            : Formats.size(status.filterSavedBytes()),
                    status != null && status.filterState() == ShardStatus.FilterState.AVAILABLE
                            ? String.format(Locale.ROOT, "%.3f%%", 100 * status.estimatedFpp())
                            : "-");
            if (status != null && !status.reason().isEmpty()) {
                reasons.add("shard " + shard + ": " + status.reason());
            }
        }
        table.print(out);
        reasons.forEach(out::println);
        SnapshotTotals all = SnapshotTotals.of(snapshots);
        out.println(
                all.count()
                        + " snapshot(s), "
                        + all.pinned()
                        + " pinned, "
                        + Formats.size(all.bytes()));
        printExpiry(admin.describeExpiry(name));
        return EXIT_OK;
    }

    /** The table's TTL'd states and what server-side expiry did with them. */
    private void printExpiry(TableExpiry expiry) {
        out.println();
        out.println(
                "live entries  ~"
                        + expiry.estimatedLiveEntries()
                        + " (RocksDB's estimate over "
                        + expiry.openShards()
                        + " open shard(s))");
        if (expiry.states().isEmpty()) {
            out.println("expiry        no state with a TTL registered");
            return;
        }
        for (TtlState state : expiry.states()) {
            out.println(
                    String.format(
                            Locale.ROOT,
                            "ttl state     %08x: %s, %s%s",
                            state.stateId(),
                            Formats.duration(state.ttlMillis()),
                            state.layout(),
                            state.layout() == TtlState.Layout.LIST
                                    ? state.fixedElementBytes() > 0
                                            ? ", elements of " + state.fixedElementBytes() + " B"
                                            : ", variable-length elements: not expired here"
                                    : ""));
        }
        out.println(
                "expired       "
                        + expiry.expiredEntries()
                        + " entries of "
                        + expiry.sweptEntries()
                        + " swept since the node(s) started; last sweep "
                        + (expiry.lastSweepMillis() == 0
                                ? "none yet"
                                : Formats.instant(expiry.lastSweepMillis())));
    }

    /**
     * available, rebuilding (no filter until the scan ends), unavailable (none, see the reason);
     * for closed shards: saved, empty or missing (rebuilt when it opens); - for untouched shards.
     */
    private static String filterState(@Nullable ShardStatus status) {
        if (status == null) {
            return "-";
        }
        String state = status.filterState().name().toLowerCase(Locale.ROOT);
        if (status.filterState() == ShardStatus.FilterState.AVAILABLE && status.rebuildRunning()) {
            return state + "+rebuild " + status.rebuildKeysScanned() + " keys";
        }
        if (status.filterState() == ShardStatus.FilterState.REBUILDING) {
            return state + " " + status.rebuildKeysScanned() + " keys";
        }
        return state;
    }

    int snapshots(String name, @Nullable Integer onlyShard) {
        TableInfo info = table(name);
        List<SnapshotInfo> snapshots;
        if (onlyShard == null) {
            snapshots = kv.listSnapshots(name);
        } else {
            checkShard(info, onlyShard);
            snapshots = kv.listSnapshots(name, onlyShard);
        }
        List<SnapshotInfo> byId = new ArrayList<>(snapshots);
        byId.sort(
                Comparator.comparingLong(SnapshotInfo::snapshotId)
                        .thenComparingInt(SnapshotInfo::shard));
        snapshotTable(byId).print(out);
        out.println();
        Map<Long, List<SnapshotInfo>> perId = new TreeMap<>();
        for (SnapshotInfo snapshot : byId) {
            perId.computeIfAbsent(snapshot.snapshotId(), id -> new ArrayList<>()).add(snapshot);
        }
        TextTable summary =
                new TextTable(
                        ">id",
                        ">shards",
                        ">pinned",
                        ">local",
                        ">in storage",
                        ">size",
                        ">files",
                        "created");
        for (Map.Entry<Long, List<SnapshotInfo>> entry : perId.entrySet()) {
            SnapshotTotals totals = SnapshotTotals.of(entry.getValue());
            summary.row(
                    entry.getKey(),
                    totals.count() + "/" + info.shardCount(),
                    totals.pinned(),
                    totals.local(),
                    totals.inCheckpointStorage(),
                    Formats.size(totals.bytes()),
                    totals.files(),
                    Formats.instant(totals.oldestCreatedMillis()));
        }
        summary.print(out);
        out.println(perId.size() + " snapshot id(s), " + snapshots.size() + " shard snapshot(s)");
        return EXIT_OK;
    }

    int dropSnapshot(String name, int shard, long id, boolean yes) {
        TableInfo info = table(name);
        checkShard(info, shard);
        SnapshotInfo snapshot =
                kv.listSnapshots(name, shard).stream()
                        .filter(s -> s.snapshotId() == id)
                        .findFirst()
                        .orElseThrow(
                                () ->
                                        new AdminException(
                                                "no snapshot "
                                                        + id
                                                        + " of table '"
                                                        + name
                                                        + "' shard "
                                                        + shard));
        if (!yes) {
            out.println("would drop:");
            snapshotTable(List.of(snapshot)).print(out);
            return notConfirmed();
        }
        if (!kv.dropSnapshot(name, shard, id)) {
            throw new AdminException(
                    "snapshot " + id + " of table '" + name + "' shard " + shard + " is gone");
        }
        out.println(
                "dropped snapshot "
                        + id
                        + " of table '"
                        + name
                        + "' shard "
                        + shard
                        + (snapshot.pinned() ? " (pinned)" : ""));
        return EXIT_OK;
    }

    int dropSnapshotsBelow(String name, long id, boolean yes) {
        table(name);
        List<SnapshotInfo> below =
                kv.listSnapshots(name).stream().filter(s -> s.snapshotId() < id).toList();
        List<SnapshotInfo> droppable = below.stream().filter(s -> !s.pinned()).toList();
        long sparedPinned = below.size() - droppable.size();
        if (!yes) {
            out.println("would drop:");
            snapshotTable(droppable).print(out);
            out.println(
                    droppable.size()
                            + " snapshot(s) below "
                            + id
                            + " would be dropped, "
                            + Formats.size(SnapshotTotals.of(droppable).bytes())
                            + "; "
                            + sparedPinned
                            + " pinned spared");
            return notConfirmed();
        }
        int dropped = kv.dropSnapshotsBelow(name, id);
        out.println(
                "dropped "
                        + dropped
                        + " snapshot(s) of table '"
                        + name
                        + "' below "
                        + id
                        + "; "
                        + sparedPinned
                        + " pinned spared");
        return EXIT_OK;
    }

    int dropTable(String name, boolean yes) {
        TableInfo info = table(name);
        if (!yes) {
            SnapshotTotals totals = SnapshotTotals.of(kv.listSnapshots(name));
            out.println(
                    "would drop table '"
                            + name
                            + "': "
                            + info.shardCount()
                            + " shard(s), "
                            + totals.count()
                            + " snapshot(s) ("
                            + totals.pinned()
                            + " pinned), "
                            + Formats.size(totals.bytes()));
            return notConfirmed();
        }
        kv.dropTable(name);
        out.println("dropped table '" + name + "'");
        return EXIT_OK;
    }

    private int notConfirmed() {
        out.println("nothing dropped: add --yes to drop");
        return EXIT_NOT_CONFIRMED;
    }

    private TableInfo table(String name) {
        return kv.describeTable(name)
                .orElseThrow(() -> new AdminException("unknown table '" + name + "'"));
    }

    private static void checkShard(TableInfo info, int shard) {
        if (shard >= info.shardCount()) {
            throw new AdminException(
                    "table '"
                            + info.name()
                            + "' has shards 0.."
                            + (info.shardCount() - 1)
                            + ", not "
                            + shard);
        }
    }

    /**
     * Where a snapshot is: on this node ({@code local}), in the job's checkpoint storage ({@code
     * storage}: restoring from it downloads), or both.
     */
    private static String where(SnapshotInfo snapshot) {
        if (!snapshot.local()) {
            return "storage";
        }
        return snapshot.inCheckpointStorage() ? "local+storage" : "local";
    }

    private static TextTable snapshotTable(List<SnapshotInfo> snapshots) {
        TextTable table =
                new TextTable(">id", ">shard", "pinned", "where", ">size", ">files", "created");
        for (SnapshotInfo snapshot : snapshots) {
            table.row(
                    snapshot.snapshotId(),
                    snapshot.shard(),
                    snapshot.pinned() ? "yes" : "no",
                    where(snapshot),
                    Formats.size(snapshot.sizeBytes()),
                    snapshot.fileCount(),
                    Formats.instant(snapshot.createdAtMillis()));
        }
        return table;
    }
}
