package io.taishan.demo;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.protocol.ScanRange;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.flink.api.common.JobID;

/**
 * Looks into the kv-server through its gRPC client, as an operator would: the tables, their
 * snapshots, and the entries of a checkpoint or of a finished job, counted per state.
 *
 * <p>A checkpoint is counted in a scratch table cloned from its shard snapshots, so that the live
 * shards, owned by a running job, are never touched (opening one would fence its owner).
 */
final class StoreInspector {
    private static final String SCRATCH_TABLE = "demo-inspection";
    private static final int PAGE = 1000;

    private final KvStore kv;
    private final List<String> stateNames;
    private final Map<Integer, String> stateNamesById = new LinkedHashMap<>();

    /**
     * @param stateNames the job's state names, in the order the counts are told
     */
    StoreInspector(KvStore kv, List<String> stateNames) {
        this.kv = kv;
        this.stateNames = stateNames;
        for (String name : stateNames) {
            stateNamesById.put(stateId(name), name);
        }
    }

    List<TableInfo> tables() {
        return kv.listTables();
    }

    /**
     * The one table of the run's keyed operator: its name starts with the backend's prefix and job.
     */
    TableInfo tableOf(JobID job) {
        List<TableInfo> tables =
                tables().stream().filter(t -> t.name().contains("_" + job + "_")).toList();
        if (tables.size() != 1) {
            throw new DemoFailure(
                    "expected one table of job "
                            + job
                            + " in the store (the Taishan backend was not used?), found "
                            + tables.stream().map(TableInfo::name).toList());
        }
        return tables.get(0);
    }

    /** Shard snapshots of the table by snapshot (= checkpoint) id. */
    Map<Long, List<SnapshotInfo>> snapshots(String table) {
        return kv.listSnapshots(table).stream()
                .collect(
                        Collectors.groupingBy(
                                SnapshotInfo::snapshotId, TreeMap::new, Collectors.toList()));
    }

    /** Entries per state in the table's snapshot, through a clone of every shard snapshot. */
    Map<String, Long> entriesInSnapshot(TableInfo table, long snapshotId) {
        kv.describeTable(SCRATCH_TABLE).ifPresent(t -> kv.dropTable(SCRATCH_TABLE));
        kv.createTable(SCRATCH_TABLE, table.shardCount());
        try {
            Map<String, Long> entries = emptyCounts();
            for (SnapshotInfo shard : kv.listSnapshots(table.name())) {
                if (shard.snapshotId() == snapshotId) {
                    count(
                            kv.cloneShard(table.name(), shard.shard(), snapshotId, SCRATCH_TABLE),
                            entries);
                }
            }
            return entries;
        } finally {
            kv.dropTable(SCRATCH_TABLE);
        }
    }

    /** Entries per state in the live shards of a table whose job has ended. */
    Map<String, Long> liveEntries(TableInfo table) {
        Map<String, Long> entries = emptyCounts();
        for (int shard = 0; shard < table.shardCount(); shard++) {
            count(kv.openShard(table.name(), shard), entries);
        }
        return entries;
    }

    private Map<String, Long> emptyCounts() {
        Map<String, Long> counts = new LinkedHashMap<>();
        stateNames.forEach(name -> counts.put(name, 0L));
        return counts;
    }

    private void count(ShardLease lease, Map<String, Long> entries) {
        try (CloseableIterator<KvEntry> it = kv.scan(lease, ScanRange.all(), PAGE, true)) {
            while (it.hasNext()) {
                byte[] key = it.next().key();
                int id =
                        key.length < 4
                                ? -1
                                : ((key[0] & 0xFF) << 24)
                                        | ((key[1] & 0xFF) << 16)
                                        | ((key[2] & 0xFF) << 8)
                                        | (key[3] & 0xFF);
                entries.merge(stateNamesById.getOrDefault(id, "state #" + id), 1L, Long::sum);
            }
        }
    }

    static String describe(Map<String, Long> entries) {
        long total = entries.values().stream().mapToLong(Long::longValue).sum();
        return String.format("%,d entries (", total)
                + entries.entrySet().stream()
                        .filter(e -> e.getValue() > 0)
                        .map(e -> String.format("%s %,d", e.getKey(), e.getValue()))
                        .collect(Collectors.joining(", "))
                + ")";
    }

    /**
     * The backend's state id: the first four bytes of the name's SHA-256, top bit clear, the first
     * four bytes of each of the state's keys (backend-core's documented key layout).
     */
    static int stateId(String stateName) {
        try {
            byte[] d =
                    MessageDigest.getInstance("SHA-256")
                            .digest(stateName.getBytes(StandardCharsets.UTF_8));
            int id =
                    ((d[0] & 0xFF) << 24)
                            | ((d[1] & 0xFF) << 16)
                            | ((d[2] & 0xFF) << 8)
                            | (d[3] & 0xFF);
            return id & 0x7FFF_FFFF;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
