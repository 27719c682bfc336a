package io.taishan.it;

import static io.taishan.it.Scenarios.SCHEDULE;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.ReferenceRun;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.it.job.KeyFinalState;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 6 §3: {@code bin/taishan-kv-admin gc}, the real script, against real jobs' tables.
 *
 * <p>Job 1 checkpoints, takes a native savepoint (pinned snapshots) and is cancelled; job 2
 * restores that savepoint (a clone into its own table), checkpoints with three checkpoints retained
 * and is cancelled; the oldest of them, C, is the one thing kept. A dry run lists exactly
 * everything else and drops nothing; a {@code --keep} that does not read stops gc with nothing
 * dropped; with {@code --yes} while job 3 (restored from C) runs, gc drops job 1's table whole and
 * every shard snapshot of job 2 that C does not reference, and leaves job 3's table alone although
 * nothing kept references it. Then job 4 restores C once more and runs to its end: its final
 * per-key state must equal an uninterrupted HashMap run's.
 */
class SnapshotGcITCase {
    private static final String PREFIX = "flink_";

    /** The jobs' last writes are seconds old when gc runs; a running job writes every 200 ms. */
    private static final String MIN_IDLE = "2s";

    private static final long IDLE_WAIT_MILLIS = 3_000;

    /** The JobManager reads the retention from its own configuration, not the job's. */
    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension(retainThree());

    private static Configuration retainThree() {
        Configuration config = new Configuration();
        config.set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 3);
        return config;
    }

    @Test
    @Timeout(300)
    void gcDropsWhatNoKeptCheckpointNeedsAndTheKeptOneStillRestoresExactly(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);

        try (TaishanBackendFixture backend = TaishanBackendFixture.start(workDir.resolve("kv"));
                KvStore kv =
                        KvStores.connect(KvClientConfig.forAddresses(address(backend)).build())) {
            Runs runs = new Runs(new JobHarness(cluster, backend, SCHEDULE, workDir));

            RunningJob first = runs.start(2, null).awaitCompletedCheckpoints(2);
            Runs.Restore savepoint = runs.end(first, Runs.Exit.NATIVE_SAVEPOINT_THEN_CANCEL);
            RunningJob second = runs.start(3, savepoint).awaitCompletedCheckpoints(5);
            runs.end(second, Runs.Exit.RETAINED_CHECKPOINT);
            Runs.Restore kept =
                    new Runs.Restore(
                            oldestRetained(workDir.resolve("checkpoints"), second),
                            Runs.Exit.RETAINED_CHECKPOINT);
            long keptId = checkpointId(kept.path());
            String firstTable = tableOf(kv, first);
            String secondTable = tableOf(kv, second);
            Thread.sleep(IDLE_WAIT_MILLIS);

            Map<String, Set<String>> before = snapshots(kv);
            assertThat(before.keySet()).containsExactlyInAnyOrder(firstTable, secondTable);
            assertThat(before.get(secondTable)).containsAll(shardsAt(keptId));
            assertThat(pinnedIds(kv, firstTable))
                    .as("job 1's native savepoint")
                    .containsExactly(checkpointIdOfSavepoint(kv, firstTable));

            // Dry run: drops nothing, lists exactly what nothing kept references.
            Gc dry = gc(backend, "--keep", kept.path());
            assertThat(dry.exit).as(dry.describe()).isEqualTo(3);
            assertThat(snapshots(kv)).isEqualTo(before);
            assertThat(dry.out)
                    .contains(firstTable + ": 128 shards, ")
                    .contains("; nothing kept references it")
                    .contains("drop (pinned: a native savepoint's, which no --keep names)")
                    .contains("nothing dropped: add --yes to drop");
            assertThat(dry.rows(firstTable))
                    .allSatisfy(row -> assertThat(row.action()).startsWith("drop"))
                    .extracting(GcRow::id)
                    .containsExactlyElementsOf(ids(before.get(firstTable)));
            Set<Long> secondIds = ids(before.get(secondTable));
            List<GcRow> secondRows = dry.rows(secondTable);
            assertThat(secondRows).extracting(GcRow::id).containsExactlyElementsOf(secondIds);
            for (GcRow row : secondRows) {
                assertThat(row.action())
                        .as("snapshot %s of job 2", row.id())
                        .isEqualTo(row.id() == keptId ? "keep: checkpoint " + keptId : "drop");
                if (row.id() == keptId) {
                    assertThat(row.shards()).isEqualTo(128);
                } else {
                    // A checkpoint in flight at the cancel holds only the shards of the subtasks
                    // whose markers got there first (42 of 128 seen at parallelism 3); dropped all
                    // the same.
                    assertThat(row.shards()).isBetween(1, 128);
                }
            }
            assertThat(secondIds)
                    .as("the newer retained checkpoints' snapshots too")
                    .hasSizeGreaterThanOrEqualTo(3);

            // A kept path that does not read stops everything, even with --yes.
            Path notACheckpoint = workDir.resolve("checkpoints").resolve(second.id().toString());
            for (String bad :
                    List.of(
                            workDir.resolve("no-such-checkpoint").toString(),
                            notACheckpoint.toString())) {
                Gc refused = gc(backend, "--keep", kept.path(), "--keep", bad, "--yes");
                assertThat(refused.exit).as(refused.describe()).isEqualTo(1);
                assertThat(refused.err)
                        .contains("cannot read the kept checkpoints, so nothing is dropped")
                        .contains("cannot read " + bad);
                assertThat(snapshots(kv)).isEqualTo(before);
            }

            // --yes while job 3 runs on a table that nothing kept references.
            RunningJob third = runs.start(2, kept).awaitCompletedCheckpoints(2);
            String thirdTable = tableOf(kv, third);
            Gc yes = gc(backend, "--keep", kept.path(), "--yes");
            assertThat(yes.exit).as(yes.describe()).isZero();
            Map<String, Set<String>> after = snapshots(kv);
            assertThat(after).doesNotContainKey(firstTable);
            assertThat(after.get(secondTable)).isEqualTo(shardsAt(keptId));
            assertThat(after).containsKey(thirdTable);
            assertThat(yes.out)
                    .contains(thirdTable + ": 128 shards, ")
                    .contains(": left alone, used within --min-idle 2s")
                    .contains(firstTable + ": dropped the table");
            third.keepRunning(java.time.Duration.ofMillis(500)).checkpoint();
            runs.end(third, Runs.Exit.RETAINED_CHECKPOINT);

            // What matters: the kept checkpoint restores exactly.
            RunningJob last = runs.startToEnd(2, kept);
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            runs.finished(last);
            runs.assertEveryRunUsed(backend.keyedBackendClassName());
            runs.assertNoInterruptedRunReachedTheEnd();
            FinalStates.assertSame(actual, expected, "restored from " + kept.path() + " after gc");
        }
    }

    // ---- the admin CLI as an operator runs it

    private static Gc gc(TaishanBackendFixture backend, String... options) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("taishan.admin.script"));
        command.addAll(List.of("--address", address(backend), "gc", "--table-prefix", PREFIX));
        command.addAll(List.of("--min-idle", MIN_IDLE));
        command.addAll(List.of(options));
        long started = System.nanoTime();
        Path out = Files.createTempFile("gc", ".out");
        Path err = Files.createTempFile("gc", ".err");
        try {
            Process p =
                    new ProcessBuilder(command)
                            .redirectOutput(out.toFile())
                            .redirectError(err.toFile())
                            .start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError("gc did not end within 120 s: " + command);
            }
            Gc gc =
                    new Gc(
                            command,
                            p.exitValue(),
                            Files.readString(out, StandardCharsets.UTF_8),
                            Files.readString(err, StandardCharsets.UTF_8));
            // For the report: what an operator would have seen.
            System.out.printf(
                    "$ %s%n%s%s(exit %d after %d ms)%n%n",
                    String.join(" ", command.subList(1, command.size())),
                    gc.out,
                    gc.err,
                    gc.exit,
                    (System.nanoTime() - started) / 1_000_000);
            return gc;
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    private record Gc(List<String> command, int exit, String out, String err) {
        String describe() {
            return String.join(" ", command) + "\nstdout:\n" + out + "\nstderr:\n" + err;
        }

        /** The rows listed under the table's heading line. */
        List<GcRow> rows(String table) {
            List<String> lines = out.lines().toList();
            int heading = -1;
            for (int i = 0; i < lines.size(); i++) {
                if (lines.get(i).startsWith(table + ":")) {
                    heading = i;
                }
            }
            assertThat(heading).as("a heading for %s in%n%s", table, out).isNotNegative();
            List<GcRow> rows = new ArrayList<>();
            // heading, column names, then: id shards pinned size(2) created(2) action...
            for (int i = heading + 2;
                    i < lines.size() && lines.get(i).matches("\\s*\\d+\\s.*");
                    i++) {
                String[] cells = lines.get(i).trim().split("\\s+", 8);
                rows.add(new GcRow(Long.parseLong(cells[0]), Integer.parseInt(cells[1]), cells[7]));
            }
            return rows;
        }
    }

    private record GcRow(long id, int shards, String action) {}

    // ---- the store as the test sees it

    private static String address(TaishanBackendFixture backend) {
        return backend.configuration().getString(TaishanBackendFixture.ADDRESS_KEY, null);
    }

    private static String tableOf(KvStore kv, RunningJob job) {
        List<String> tables =
                kv.listTables().stream()
                        .map(TableInfo::name)
                        .filter(name -> name.startsWith(PREFIX + job.id() + "_"))
                        .toList();
        assertThat(tables).as("tables of job %s", job.id()).hasSize(1);
        return tables.get(0);
    }

    /** Every table: its shard snapshots as "shard/id". */
    private static Map<String, Set<String>> snapshots(KvStore kv) {
        Map<String, Set<String>> all = new TreeMap<>();
        for (TableInfo table : kv.listTables()) {
            Set<String> ids = new TreeSet<>();
            for (SnapshotInfo s : kv.listSnapshots(table.name())) {
                ids.add(s.shard() + "/" + s.snapshotId());
            }
            all.put(table.name(), ids);
        }
        return all;
    }

    private static Set<Long> pinnedIds(KvStore kv, String table) {
        Set<Long> ids = new TreeSet<>();
        for (SnapshotInfo s : kv.listSnapshots(table)) {
            if (s.pinned()) {
                ids.add(s.snapshotId());
            }
        }
        return ids;
    }

    /** The savepoint's snapshots are the pinned ones; one id, on every shard. */
    private static long checkpointIdOfSavepoint(KvStore kv, String table) {
        Set<Long> pinned = pinnedIds(kv, table);
        assertThat(pinned).hasSize(1);
        long id = pinned.iterator().next();
        assertThat(kv.listSnapshots(table).stream().filter(s -> s.snapshotId() == id).count())
                .isEqualTo(JobHarness.MAX_PARALLELISM);
        return id;
    }

    private static Set<String> shardsAt(long id) {
        Set<String> ids = new TreeSet<>();
        for (int s = 0; s < JobHarness.MAX_PARALLELISM; s++) {
            ids.add(s + "/" + id);
        }
        return ids;
    }

    private static Set<Long> ids(Set<String> shardSlashIds) {
        Set<Long> ids = new TreeSet<>();
        for (String s : shardSlashIds) {
            ids.add(Long.parseLong(s.substring(s.indexOf('/') + 1)));
        }
        return ids;
    }

    private static String oldestRetained(Path checkpoints, RunningJob job) throws IOException {
        try (Stream<Path> dirs = Files.list(checkpoints.resolve(job.id().toString()))) {
            return dirs.filter(dir -> dir.getFileName().toString().startsWith("chk-"))
                    .filter(dir -> Files.exists(dir.resolve("_metadata")))
                    .min(Comparator.comparingLong(dir -> checkpointId(dir.toString())))
                    .orElseThrow()
                    .toUri()
                    .toString();
        }
    }

    /** {@code file:/.../chk-N/} → N */
    private static long checkpointId(String path) {
        String trimmed = path.replaceAll("/+$", "");
        return Long.parseLong(trimmed.substring(trimmed.lastIndexOf("chk-") + "chk-".length()));
    }
}
