package io.taishan.it.soak;

import io.taishan.it.harness.RunningJob;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableInfo;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.runtime.checkpoint.CheckpointStatsCounts;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStats;
import org.apache.flink.runtime.checkpoint.FailedCheckpointStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;

/**
 * Takes one row of the soak's curves: the kv-server's snapshots (through the public client, as
 * {@code taishan-kv-admin snapshots} sees them), its process (open files, threads, RSS, heap), its
 * data directory on disk ({@code du}, hard links counted once), the job's checkpoints and records,
 * and the same process figures of the test's JVM, where the keyed backends run. Each row goes to
 * the CSV at once, so a run that fails or is killed still leaves its curves.
 */
final class SoakSampler implements AutoCloseable {
    static final List<String> COLUMNS =
            List.of(
                    SoakCurve.TIME,
                    SoakCurve.RUNNING,
                    "records",
                    "records_per_s",
                    "checkpoints_completed",
                    "checkpoints_failed",
                    "checkpoints_in_progress",
                    "last_checkpoint_id",
                    "last_checkpoint_ms",
                    "last_checkpoint_age_s",
                    "flink_checkpoint_dirs",
                    "kv_tables",
                    "kv_shards",
                    "kv_snapshot_ids",
                    "kv_oldest_snapshot_id",
                    "kv_shard_snapshots",
                    "kv_pinned_snapshots",
                    "kv_snapshot_mib",
                    "server_fds",
                    "server_sst_fds",
                    "server_threads",
                    "server_rss_mib",
                    "server_heap_used_mib",
                    "server_heap_live_mib",
                    "disk_mib",
                    "disk_inodes",
                    "flink_fds",
                    "flink_threads",
                    "flink_rss_mib",
                    "flink_heap_used_mib",
                    "flink_heap_live_mib",
                    "load1");

    private static final double MIB = 1 << 20;

    private final MiniCluster cluster;
    private final RunningJob job;
    private final Path dataDir;
    private final Path jobCheckpointDir;
    private final long liveHeapEveryNanos;
    private final KvStore kv;
    private final JvmProbe server;
    private final JvmProbe flink;
    private final SoakCurve curve = new SoakCurve(COLUMNS);
    private final BufferedWriter csv;
    private final long startNanos;

    private double previousT = Double.NaN;
    private double previousRecords;
    private boolean liveHeapMeasured;
    private long lastLiveHeapNanos;
    private double serverLiveHeap = Double.NaN;
    private double flinkLiveHeap = Double.NaN;

    /**
     * @param liveHeapEveryNanos how often both JVMs get a full GC to measure their live heap
     */
    SoakSampler(
            MiniCluster cluster,
            RunningJob job,
            String kvAddress,
            long serverPid,
            Path dataDir,
            Path jobCheckpointDir,
            long liveHeapEveryNanos,
            Path csvFile,
            long startNanos)
            throws IOException {
        this.cluster = cluster;
        this.job = job;
        this.dataDir = dataDir;
        this.jobCheckpointDir = jobCheckpointDir;
        this.liveHeapEveryNanos = liveHeapEveryNanos;
        this.startNanos = startNanos;
        this.kv = KvStores.connect(KvClientConfig.forAddresses(kvAddress).build());
        this.server = JvmProbe.attach("kv-server", serverPid);
        this.flink = JvmProbe.self();
        Files.createDirectories(csvFile.getParent());
        this.csv = Files.newBufferedWriter(csvFile, StandardCharsets.UTF_8);
        csv.write(curve.csvHeader());
        csv.newLine();
        csv.flush();
    }

    SoakCurve curve() {
        return curve;
    }

    /** Why the server's heap is not in the curves, or null if it is. */
    String serverHeapUnreachable() {
        return server.heapUnreachable();
    }

    /** Takes a row and writes it to the CSV; {@code running} false for the one after the end. */
    Map<String, Double> sample(boolean running) throws Exception {
        long now = System.nanoTime();
        Map<String, Double> row = new LinkedHashMap<>();
        double t = (now - startNanos) / 1e9;
        row.put(SoakCurve.TIME, Math.rint(t * 10) / 10);
        row.put(SoakCurve.RUNNING, running ? 1.0 : 0.0);

        double records = job.recordsProcessed();
        row.put("records", records);
        if (!Double.isNaN(previousT) && t > previousT) {
            row.put("records_per_s", Math.rint((records - previousRecords) / (t - previousT)));
        }
        previousT = t;
        previousRecords = records;

        checkpoints(row);
        snapshots(row);
        process(server, "server", row);
        process(flink, "flink", row);
        if (!liveHeapMeasured || now - lastLiveHeapNanos >= liveHeapEveryNanos) {
            liveHeapMeasured = true;
            lastLiveHeapNanos = now;
            serverLiveHeap = quietly(server::liveHeapMib);
            flinkLiveHeap = quietly(flink::liveHeapMib);
        }
        row.put("server_heap_live_mib", round(serverLiveHeap));
        row.put("flink_heap_live_mib", round(flinkLiveHeap));
        row.put("disk_mib", round(du("-B1") / MIB));
        row.put("disk_inodes", du("--inodes"));
        row.put(
                "load1",
                Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]));

        csv.write(curve.append(row));
        csv.newLine();
        csv.flush();
        return row;
    }

    private void checkpoints(Map<String, Double> row) throws Exception {
        AccessExecutionGraph graph =
                cluster.getArchivedExecutionGraph(job.id()).get(30, TimeUnit.SECONDS);
        CheckpointStatsSnapshot stats = graph.getCheckpointStatsSnapshot();
        if (stats != null) {
            CheckpointStatsCounts counts = stats.getCounts();
            row.put("checkpoints_completed", (double) counts.getNumberOfCompletedCheckpoints());
            row.put("checkpoints_failed", (double) counts.getNumberOfFailedCheckpoints());
            row.put("checkpoints_in_progress", (double) counts.getNumberOfInProgressCheckpoints());
            CompletedCheckpointStats latest = stats.getHistory().getLatestCompletedCheckpoint();
            if (latest != null) {
                row.put("last_checkpoint_id", (double) latest.getCheckpointId());
                row.put("last_checkpoint_ms", (double) latest.getEndToEndDuration());
                row.put(
                        "last_checkpoint_age_s",
                        Math.max(0, System.currentTimeMillis() - latest.getLatestAckTimestamp())
                                / 1000.0);
            }
        }
        if (Files.isDirectory(jobCheckpointDir)) {
            try (Stream<Path> dirs = Files.list(jobCheckpointDir)) {
                row.put(
                        "flink_checkpoint_dirs",
                        (double)
                                dirs.filter(d -> d.getFileName().toString().startsWith("chk-"))
                                        .count());
            }
        }
    }

    /** The failure message of the job's latest failed checkpoint, or null if none failed. */
    String latestCheckpointFailure() throws Exception {
        CheckpointStatsSnapshot stats =
                cluster.getArchivedExecutionGraph(job.id())
                        .get(30, TimeUnit.SECONDS)
                        .getCheckpointStatsSnapshot();
        if (stats == null || stats.getHistory().getLatestFailedCheckpoint() == null) {
            return null;
        }
        FailedCheckpointStats failed = stats.getHistory().getLatestFailedCheckpoint();
        return "checkpoint " + failed.getCheckpointId() + ": " + failed.getFailureMessage();
    }

    private void snapshots(Map<String, Double> row) {
        List<TableInfo> tables = kv.listTables();
        long shards = 0;
        long maxIds = 0;
        long oldest = Long.MAX_VALUE;
        long shardSnapshots = 0;
        long pinned = 0;
        long bytes = 0;
        for (TableInfo table : tables) {
            shards += table.shardCount();
            Set<Long> ids = new HashSet<>();
            for (SnapshotInfo snapshot : kv.listSnapshots(table.name())) {
                ids.add(snapshot.snapshotId());
                oldest = Math.min(oldest, snapshot.snapshotId());
                shardSnapshots++;
                pinned += snapshot.pinned() ? 1 : 0;
                bytes += snapshot.sizeBytes();
            }
            maxIds = Math.max(maxIds, ids.size());
        }
        row.put("kv_tables", (double) tables.size());
        row.put("kv_shards", (double) shards);
        row.put("kv_snapshot_ids", (double) maxIds);
        if (oldest != Long.MAX_VALUE) {
            row.put("kv_oldest_snapshot_id", (double) oldest);
        }
        row.put("kv_shard_snapshots", (double) shardSnapshots);
        row.put("kv_pinned_snapshots", (double) pinned);
        row.put("kv_snapshot_mib", round(bytes / MIB));
    }

    private static void process(JvmProbe probe, String prefix, Map<String, Double> row)
            throws IOException {
        long[] files = probe.openFiles();
        row.put(prefix + "_fds", (double) files[0]);
        if (prefix.equals("server")) {
            row.put("server_sst_fds", (double) files[1]);
        }
        double[] status = probe.residentMibAndThreads();
        row.put(prefix + "_rss_mib", round(status[0]));
        row.put(prefix + "_threads", status[1]);
        row.put(prefix + "_heap_used_mib", round(quietly(probe::heapUsedMib)));
    }

    /** {@code du -s <option>} of the data dir: bytes allocated or inodes, hard links once. */
    private double du(String option) throws IOException, InterruptedException {
        Process du =
                new ProcessBuilder("du", "-s", option, dataDir.toString())
                        .redirectError(ProcessBuilder.Redirect.DISCARD)
                        .start();
        // A file RocksDB deletes while du walks makes du exit 1; its total is still right.
        String out = new String(du.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!du.waitFor(30, TimeUnit.SECONDS)) {
            du.destroyForcibly();
            return Double.NaN;
        }
        String[] fields = out.trim().split("\\s+");
        return fields.length > 0 && fields[0].matches("\\d+")
                ? Double.parseDouble(fields[0])
                : Double.NaN;
    }

    private interface Measure {
        double get();
    }

    /** A figure of a JVM that has just exited (the server after the run) is not measured. */
    private static double quietly(Measure measure) {
        try {
            return measure.get();
        } catch (RuntimeException e) {
            return Double.NaN;
        }
    }

    private static double round(double mib) {
        return Math.rint(mib * 10) / 10;
    }

    @Override
    public void close() throws IOException {
        try (csv;
                kv;
                server) {
            flink.close();
        }
    }
}
