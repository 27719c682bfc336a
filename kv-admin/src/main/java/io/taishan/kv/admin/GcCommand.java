package io.taishan.kv.admin;

import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardStatus;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableInfo;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * {@code gc}: drops every table and shard snapshot in scope that no kept checkpoint or savepoint
 * references, sparing tables used recently. Prints the plan first; drops only with {@code --yes}.
 *
 * <p>Safety, since this deletes production state: the kept paths are all read before anything is
 * asked of the server, and one that does not read stops it; a kept reference the server cannot find
 * stops it too (another cluster's address, or a kept checkpoint that is broken already); only
 * tables under a named prefix are looked at; a table whose shards were leased, written or
 * snapshotted within {@code --min-idle} is left alone whole, and that is checked again just before
 * each table's drop.
 */
final class GcCommand {
    /**
     * Shard snapshots dropped at once: each drop is a rename and a delete with fsyncs on its node
     * (about 25 ms here), so one after the other a 128-shard table's few ids take seconds.
     */
    private static final int DROP_THREADS = 8;

    private final KvStore kv;
    private final KvStore.Admin admin;
    private final PrintStream out;
    private final GcOptions options;

    GcCommand(KvStore kv, PrintStream out, GcOptions options) {
        this.kv = kv;
        this.admin = kv.admin().orElseThrow();
        this.out = out;
        this.options = options;
    }

    int run(boolean yes) {
        KeptSnapshots kept = kept();
        printKept(kept);

        List<GcPlan.TableState> tables = new ArrayList<>();
        int all = 0;
        List<TableInfo> listed = new ArrayList<>(kv.listTables());
        listed.sort(Comparator.comparing(TableInfo::name));
        for (TableInfo info : listed) {
            all++;
            if (options.inScope(info.name())) {
                tables.add(
                        new GcPlan.TableState(
                                info, lastActiveMillis(info), kv.listSnapshots(info.name())));
            }
        }
        GcPlan plan = GcPlan.of(kept, options, tables, System.currentTimeMillis());
        out.println(
                "scope: "
                        + tables.size()
                        + " of "
                        + all
                        + " table(s) start with "
                        + String.join(" or ", options.tablePrefixes())
                        + (options.minIdle().isZero()
                                ? "; --min-idle 0: recently used tables are not spared"
                                : "; tables used within the last "
                                        + Formats.duration(options.minIdle().toMillis())
                                        + " are left alone"));
        if (!plan.referencedOutOfScope().isEmpty()) {
            out.println(
                    "kept checkpoints also reference tables outside the scope, not looked at: "
                            + String.join(", ", plan.referencedOutOfScope()));
        }
        for (GcPlan.TablePlan table : plan.tables()) {
            out.println();
            printTable(table);
        }
        out.println();
        if (!plan.missing().isEmpty()) {
            throw new AdminException(missingMessage(plan.missing()));
        }
        printSummary(plan, yes);
        if (!plan.dropsSomething()) {
            return AdminCommands.EXIT_OK;
        }
        if (!yes) {
            out.println("nothing dropped: add --yes to drop");
            return AdminCommands.EXIT_NOT_CONFIRMED;
        }
        return drop(plan);
    }

    private KeptSnapshots kept() {
        if (options.keepNone()) {
            return KeptSnapshots.none();
        }
        if (options.keptSnapshotsFile() != null) {
            return KeptSnapshots.readFile(options.keptSnapshotsFile());
        }
        return KeptSnapshots.readCheckpoints(options.keep());
    }

    /** -1 when some node does not tell (a kv-server from before ShardStatus had it). */
    private long lastActiveMillis(TableInfo info) {
        long newest = info.createdAtMillis();
        for (ShardStatus shard : admin.describeShards(info.name())) {
            if (shard.lastActiveMillis() < 0) {
                return -1;
            }
            newest = Math.max(newest, shard.lastActiveMillis());
        }
        return newest;
    }

    private void printKept(KeptSnapshots kept) {
        if (options.keepNone()) {
            out.println("kept: none (--keep-none): every idle table in scope is dropped whole");
            out.println();
            return;
        }
        out.println("kept: " + kept.checkpoints().size() + " checkpoint(s) and savepoint(s)");
        TextTable table =
                new TextTable(">id", "kind", ">taishan states", ">shard snapshots", "location");
        for (KeptSnapshots.Kept k : kept.checkpoints()) {
            table.row(
                    k.checkpointId(),
                    k.kind(),
                    k.taishanStates(),
                    k.references().size(),
                    k.location());
        }
        table.print(out);
        for (KeptSnapshots.Kept k : kept.checkpoints()) {
            if (k.references().isEmpty()) {
                out.println(
                        k.label()
                                + " references no remote snapshot"
                                + (k.taishanStates() == 0 && k.otherStates() > 0
                                        ? " (its state is in its own files, as a canonical"
                                                + " savepoint's)"
                                        : ""));
            }
        }
        out.println();
    }

    private void printTable(GcPlan.TablePlan table) {
        TableInfo info = table.info();
        String head = info.name() + ": " + info.shardCount() + " shards, " + activity(table);
        switch (table.action()) {
            case SKIP_ACTIVE -> {
                out.println(
                        head
                                + ": left alone, used within --min-idle "
                                + Formats.duration(options.minIdle().toMillis())
                                + " (a running job's table, or one just used)");
                return;
            }
            case SKIP_ACTIVITY_UNKNOWN -> {
                out.println(
                        head
                                + ": left alone, the server does not say when its shards were"
                                + " last used (a kv-server older than this admin); --min-idle 0"
                                + " would drop from it regardless");
                return;
            }
            case DROP_TABLE -> out.println(head + "; nothing kept references it");
            case DROP_SNAPSHOTS -> out.println(head);
        }
        TextTable rows = new TextTable(">id", ">shards", ">pinned", ">size", "created", "action");
        for (GcPlan.Row row : table.rows()) {
            SnapshotTotals totals = SnapshotTotals.of(row.snapshots());
            rows.row(
                    row.snapshotId(),
                    row.snapshots().size(),
                    totals.pinned(),
                    Formats.size(totals.bytes()),
                    Formats.instant(totals.oldestCreatedMillis()),
                    row.keep()
                            ? "keep: " + String.join(", ", row.keptBy())
                            : row.pinned() > 0
                                    ? "drop (pinned: a native savepoint's, which no --keep names)"
                                    : "drop");
        }
        if (!rows.isEmpty()) {
            rows.print(out);
        }
        SnapshotTotals drop = SnapshotTotals.of(table.toDrop());
        if (table.action() == GcPlan.Action.DROP_TABLE) {
            out.println(
                    "  drop the table whole, its live data too: "
                            + drop.count()
                            + " shard snapshot(s)"
                            + pinnedNote(drop)
                            + ", "
                            + Formats.size(drop.bytes()));
        } else {
            out.println(
                    "  drop "
                            + drop.count()
                            + " of "
                            + table.all().size()
                            + " shard snapshot(s)"
                            + pinnedNote(drop)
                            + ", "
                            + Formats.size(drop.bytes())
                            + "; the table and its live data stay");
        }
    }

    private String activity(GcPlan.TablePlan table) {
        if (table.lastActiveMillis() < 0) {
            return "last use unknown";
        }
        return "last leased, written or snapshotted "
                + Formats.instant(table.lastActiveMillis())
                + " ("
                + Formats.duration(System.currentTimeMillis() - table.lastActiveMillis())
                + " ago)";
    }

    private static String pinnedNote(SnapshotTotals totals) {
        return totals.pinned() == 0 ? "" : " (" + totals.pinned() + " pinned)";
    }

    private void printSummary(GcPlan plan, boolean yes) {
        int wholeTables = 0;
        int snapshotTables = 0;
        List<SnapshotInfo> dropped = new ArrayList<>();
        int skipped = 0;
        for (GcPlan.TablePlan table : plan.tables()) {
            switch (table.action()) {
                case SKIP_ACTIVE, SKIP_ACTIVITY_UNKNOWN -> skipped++;
                case DROP_TABLE -> {
                    wholeTables++;
                    dropped.addAll(table.toDrop());
                }
                case DROP_SNAPSHOTS -> {
                    if (!table.toDrop().isEmpty()) {
                        snapshotTables++;
                        dropped.addAll(table.toDrop());
                    }
                }
            }
        }
        if (skipped > 0) {
            out.println(skipped + " table(s) in scope left alone as recently used");
        }
        if (!plan.dropsSomething()) {
            out.println("nothing to drop");
            return;
        }
        SnapshotTotals totals = SnapshotTotals.of(dropped);
        out.println(
                (yes ? "dropping " : "would drop ")
                        + wholeTables
                        + " table(s) whole and shard snapshots of "
                        + snapshotTables
                        + " more: "
                        + totals.count()
                        + " shard snapshot(s), "
                        + Formats.size(totals.bytes())
                        + " (sizes summed per snapshot; files shared by several count in each)");
        if (totals.pinned() > 0) {
            out.println(
                    totals.pinned()
                            + " of them pinned: snapshots of native savepoints that no --keep"
                            + " names; those savepoints cannot be restored afterwards");
        }
    }

    private int drop(GcPlan plan) {
        ExecutorService pool = Executors.newFixedThreadPool(DROP_THREADS);
        try {
            return drop(plan, pool);
        } finally {
            pool.shutdownNow();
        }
    }

    private static boolean join(CompletableFuture<Boolean> drop) {
        try {
            return drop.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw e;
        }
    }

    private int drop(GcPlan plan, ExecutorService pool) {
        int tablesDropped = 0;
        int snapshotsDropped = 0;
        long bytes = 0;
        int spared = 0;
        for (GcPlan.TablePlan table : plan.tables()) {
            if (!table.dropsSomething()) {
                continue;
            }
            String name = table.info().name();
            Optional<String> stillIdle = recheck(table.info());
            if (stillIdle.isPresent()) {
                out.println(name + ": not dropped after all: " + stillIdle.get());
                spared++;
                continue;
            }
            List<SnapshotInfo> toDrop = table.toDrop();
            if (table.action() == GcPlan.Action.DROP_TABLE) {
                kv.dropTable(name);
                tablesDropped++;
                snapshotsDropped += toDrop.size();
                bytes += SnapshotTotals.of(toDrop).bytes();
                out.println(name + ": dropped the table (" + toDrop.size() + " shard snapshot(s))");
                continue;
            }
            for (GcPlan.Row row : table.rows()) {
                if (row.keep()) {
                    continue;
                }
                List<CompletableFuture<Boolean>> drops = new ArrayList<>();
                for (SnapshotInfo s : row.snapshots()) {
                    drops.add(
                            CompletableFuture.supplyAsync(
                                    () -> kv.dropSnapshot(name, s.shard(), s.snapshotId()), pool));
                }
                int gone = 0;
                for (int i = 0; i < drops.size(); i++) {
                    if (join(drops.get(i))) {
                        snapshotsDropped++;
                        bytes += row.snapshots().get(i).sizeBytes();
                    } else {
                        gone++;
                    }
                }
                out.println(
                        name
                                + ": dropped snapshot "
                                + row.snapshotId()
                                + " of "
                                + (row.snapshots().size() - gone)
                                + " shard(s)"
                                + (gone > 0 ? " (" + gone + " gone already)" : ""));
            }
        }
        out.println(
                "dropped "
                        + tablesDropped
                        + " table(s) whole and "
                        + snapshotsDropped
                        + " shard snapshot(s) in all, "
                        + Formats.size(bytes)
                        + (spared > 0 ? "; " + spared + " table(s) spared as used meanwhile" : ""));
        return AdminCommands.EXIT_OK;
    }

    /** Empty if the table is still idle; else why it is spared. */
    private Optional<String> recheck(TableInfo planned) {
        Optional<TableInfo> now = kv.describeTable(planned.name());
        if (now.isEmpty()) {
            return Optional.of("it is gone");
        }
        if (now.get().createdAtMillis() != planned.createdAtMillis()) {
            return Optional.of("it was dropped and created again meanwhile");
        }
        if (options.minIdle().isZero()) {
            return Optional.empty();
        }
        long lastActive = lastActiveMillis(now.get());
        if (lastActive < 0
                || System.currentTimeMillis() - lastActive < options.minIdle().toMillis()) {
            return Optional.of(
                    "it was used since the plan was made ("
                            + (lastActive < 0 ? "unknown" : Formats.instant(lastActive))
                            + ")");
        }
        return Optional.empty();
    }

    private static String missingMessage(List<GcPlan.Missing> missing) {
        GcPlan.Missing first = missing.get(0);
        return "nothing dropped: "
                + missing.size()
                + " shard snapshot(s) that kept checkpoints reference are not on the server,"
                + " the first snapshot "
                + first.ref().snapshotId()
                + " of table '"
                + first.ref().table()
                + "' shard "
                + first.ref().shard()
                + " (kept by "
                + String.join(", ", first.keptBy())
                + "). Either --address names another cluster than the one those checkpoints"
                + " ran on, or that checkpoint cannot be restored any more; if so, leave it out of"
                + " --keep.";
    }
}
