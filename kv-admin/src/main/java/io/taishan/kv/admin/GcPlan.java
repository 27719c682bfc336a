package io.taishan.kv.admin;

import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What {@code gc} decides, before it drops anything: per table in scope, keep it alone (recently
 * active), drop it whole (nothing kept references it) or drop the shard snapshots nothing kept
 * references; and the references that point at nothing, which forbid any drop.
 */
record GcPlan(List<TablePlan> tables, List<Missing> missing, Set<String> referencedOutOfScope) {

    enum Action {
        /** Written, leased or snapshotted within --min-idle: a running job's table, maybe. */
        SKIP_ACTIVE,
        /** The server does not report shard activity, so the rule cannot be applied. */
        SKIP_ACTIVITY_UNKNOWN,
        /** Nothing kept references it. */
        DROP_TABLE,
        /** Kept checkpoints reference some of its snapshots: the others go. */
        DROP_SNAPSHOTS
    }

    /** The shard snapshots of one id that share a fate. */
    record Row(long snapshotId, boolean keep, List<SnapshotInfo> snapshots, Set<String> keptBy) {
        long pinned() {
            return snapshots.stream().filter(SnapshotInfo::pinned).count();
        }
    }

    /**
     * @param lastActiveMillis the newest of its creation and its shards' last lease, write or TTL
     *     report; -1 when the server does not tell
     */
    record TablePlan(TableInfo info, long lastActiveMillis, Action action, List<Row> rows) {
        List<SnapshotInfo> toDrop() {
            return rows.stream()
                    .filter(r -> !r.keep())
                    .flatMap(r -> r.snapshots().stream())
                    .toList();
        }

        List<SnapshotInfo> all() {
            return rows.stream().flatMap(r -> r.snapshots().stream()).toList();
        }

        boolean dropsSomething() {
            return action == Action.DROP_TABLE
                    || (action == Action.DROP_SNAPSHOTS && !toDrop().isEmpty());
        }
    }

    /** A kept reference to a shard snapshot the server does not have. */
    record Missing(KeptSnapshots.Ref ref, Set<String> keptBy) {}

    /** What the server said about one table in scope. */
    record TableState(TableInfo info, long lastActiveMillis, List<SnapshotInfo> snapshots) {}

    static GcPlan of(
            KeptSnapshots kept, GcOptions options, List<TableState> tablesInScope, long nowMillis) {
        Map<String, Map<ShardId, Set<String>>> refsByTable = new HashMap<>();
        for (KeptSnapshots.Kept checkpoint : kept.checkpoints()) {
            for (KeptSnapshots.Ref ref : checkpoint.references()) {
                refsByTable
                        .computeIfAbsent(ref.table(), t -> new HashMap<>())
                        .computeIfAbsent(
                                new ShardId(ref.shard(), ref.snapshotId()), s -> new TreeSet<>())
                        .add(checkpoint.label());
            }
        }
        Set<String> referencedOutOfScope = new TreeSet<>();
        for (String table : refsByTable.keySet()) {
            if (!options.inScope(table)) {
                referencedOutOfScope.add(table);
            }
        }

        List<TablePlan> plans = new ArrayList<>();
        List<Missing> missing = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (TableState table : tablesInScope) {
            String name = table.info().name();
            seen.add(name);
            Map<ShardId, Set<String>> refs = refsByTable.getOrDefault(name, Map.of());
            Set<ShardId> present = new HashSet<>();
            for (SnapshotInfo s : table.snapshots()) {
                present.add(new ShardId(s.shard(), s.snapshotId()));
            }
            refs.forEach(
                    (id, by) -> {
                        if (!present.contains(id)) {
                            missing.add(
                                    new Missing(
                                            new KeptSnapshots.Ref(
                                                    name, id.shard(), id.snapshotId()),
                                            by));
                        }
                    });
            plans.add(
                    new TablePlan(
                            table.info(),
                            table.lastActiveMillis(),
                            action(table, refs, options.minIdle(), nowMillis),
                            rows(table.snapshots(), refs)));
        }
        // A table in scope that kept checkpoints need but that is gone altogether.
        refsByTable.forEach(
                (table, refs) -> {
                    if (options.inScope(table) && !seen.contains(table)) {
                        refs.forEach(
                                (id, by) ->
                                        missing.add(
                                                new Missing(
                                                        new KeptSnapshots.Ref(
                                                                table, id.shard(), id.snapshotId()),
                                                        by)));
                    }
                });
        missing.sort(
                Comparator.comparing((Missing m) -> m.ref().table())
                        .thenComparingLong(m -> m.ref().snapshotId())
                        .thenComparingInt(m -> m.ref().shard()));
        return new GcPlan(List.copyOf(plans), List.copyOf(missing), referencedOutOfScope);
    }

    /**
     * The rule for running jobs, checked first: a table used within {@code minIdle} is not touched
     * at all, whatever is kept, because its newest snapshots are its job's next restore.
     */
    static Action action(
            TableState table, Map<ShardId, Set<String>> refs, Duration minIdle, long nowMillis) {
        if (!minIdle.isZero()) {
            if (table.lastActiveMillis() < 0) {
                return Action.SKIP_ACTIVITY_UNKNOWN;
            }
            if (nowMillis - table.lastActiveMillis() < minIdle.toMillis()) {
                return Action.SKIP_ACTIVE;
            }
        }
        return refs.isEmpty() ? Action.DROP_TABLE : Action.DROP_SNAPSHOTS;
    }

    private static List<Row> rows(List<SnapshotInfo> snapshots, Map<ShardId, Set<String>> refs) {
        Map<RowKey, List<SnapshotInfo>> grouped = new TreeMap<>();
        Map<RowKey, Set<String>> keptBy = new LinkedHashMap<>();
        for (SnapshotInfo s : snapshots) {
            Set<String> by = refs.get(new ShardId(s.shard(), s.snapshotId()));
            RowKey key = new RowKey(s.snapshotId(), by != null);
            grouped.computeIfAbsent(key, k -> new ArrayList<>()).add(s);
            if (by != null) {
                keptBy.computeIfAbsent(key, k -> new TreeSet<>()).addAll(by);
            }
        }
        List<Row> rows = new ArrayList<>();
        grouped.forEach(
                (key, list) ->
                        rows.add(
                                new Row(
                                        key.snapshotId(),
                                        key.keep(),
                                        List.copyOf(list),
                                        keptBy.getOrDefault(key, Set.of()))));
        return rows;
    }

    boolean dropsSomething() {
        return tables.stream().anyMatch(TablePlan::dropsSomething);
    }

    record ShardId(int shard, long snapshotId) {}

    private record RowKey(long snapshotId, boolean keep) implements Comparable<RowKey> {
        @Override
        public int compareTo(RowKey o) {
            int byId = Long.compare(snapshotId, o.snapshotId);
            return byId != 0 ? byId : Boolean.compare(o.keep, keep);
        }
    }
}
