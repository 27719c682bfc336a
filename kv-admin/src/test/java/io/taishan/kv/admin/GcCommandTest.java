package io.taishan.kv.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.EmbeddedKvServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code gc} in-process against a real server, with the list of kept snapshots given as a file (the
 * Flink half that writes it is {@code KeptCheckpointReaderTest} in the snapshot module, both
 * together the integration test {@code SnapshotGcITCase}). Each test has three tables under its own
 * prefix: a finished job's that a kept checkpoint references ({@code done}: snapshots 10, 11
 * pinned, 12 kept, 13), one nothing references ({@code gone}: 5 pinned, 6), and one written just
 * now ({@code live}); and one outside the prefix.
 */
class GcCommandTest {
    /** Long enough that a table written just before gc runs is still within it on a busy box. */
    private static final Duration MIN_IDLE = Duration.ofMillis(1500);

    private static EmbeddedKvServer server;
    private static KvStore kv;

    @TempDir Path temp;

    private String prefix;
    private String done;
    private String gone;
    private String live;
    private String outside;

    @BeforeAll
    static void start() {
        server = EmbeddedKvServer.start();
        kv = KvStores.connect(KvClientConfig.forAddresses(server.address()).build());
    }

    @AfterAll
    static void stop() {
        kv.close();
        server.close();
    }

    @BeforeEach
    void tables(TestInfo test) throws Exception {
        prefix = "gc_" + test.getTestMethod().orElseThrow().getName() + "_";
        done = prefix + "done";
        gone = prefix + "gone";
        live = prefix + "live";
        outside = "other_" + test.getTestMethod().orElseThrow().getName();
        withSnapshots(done, 4, Map.of(10L, false, 11L, true, 12L, false, 13L, false));
        withSnapshots(gone, 2, Map.of(5L, true, 6L, false));
        withSnapshots(outside, 2, Map.of(1L, false));
        Thread.sleep(MIN_IDLE.toMillis() + 300);
        withSnapshots(live, 2, Map.of(1L, false, 2L, false));
    }

    @Test
    void dryRunListsExactlyTheUnreferencedAndDropsNothing() throws Exception {
        Map<String, Set<String>> before = everything();

        Result r = gc("--kept-snapshots", keptFile(12, done, 4).toString());

        assertThat(r.exit()).as(r.out() + r.err()).isEqualTo(AdminCommands.EXIT_NOT_CONFIRMED);
        assertThat(everything()).isEqualTo(before);
        assertThat(r.out()).contains("nothing dropped: add --yes to drop");
        // id, shards, pinned, size (number, unit), created (date, time), action...
        assertThat(r.section(done))
                .containsExactly(
                        List.of("10", "4", "0", "drop"),
                        List.of(
                                "11",
                                "4",
                                "4",
                                "drop (pinned: a native savepoint's, which no --keep names)"),
                        List.of("12", "4", "0", "keep: checkpoint 12"),
                        List.of("13", "4", "0", "drop"));
        assertThat(r.out())
                .contains(done + ": 4 shards, last leased, written or snapshotted")
                .contains("  drop 12 of 16 shard snapshot(s) (4 pinned), ")
                .contains(gone + ": 2 shards, last leased")
                .contains("; nothing kept references it")
                .contains(
                        "  drop the table whole, its live data too: 4 shard snapshot(s) (2 pinned)");
        assertThat(r.section(gone))
                .containsExactly(
                        List.of(
                                "5",
                                "2",
                                "2",
                                "drop (pinned: a native savepoint's, which no --keep names)"),
                        List.of("6", "2", "0", "drop"));
        assertThat(r.line(live)).contains(": left alone, used within --min-idle 1s");
        assertThat(r.out()).doesNotContain(outside);
        assertThat(r.out())
                .contains(
                        "would drop 1 table(s) whole and shard snapshots of 1 more: 16 shard snapshot(s)")
                .contains("6 of them pinned")
                .contains("1 table(s) in scope left alone as recently used");
    }

    @Test
    void yesDropsTheUnreferencedAndKeepsWhatIsReferencedRecentOrOutOfScope() throws Exception {
        Map<String, Set<String>> before = everything();

        Result r = gc("--kept-snapshots", keptFile(12, done, 4).toString(), "--yes");

        assertThat(r.exit()).as(r.out() + r.err()).isZero();
        Map<String, Set<String>> after = everything();
        assertThat(after.get(done)).isEqualTo(shardsOf(4, 12));
        assertThat(after).doesNotContainKey(gone);
        assertThat(after.get(live)).isEqualTo(before.get(live));
        assertThat(after.get(outside)).isEqualTo(before.get(outside));
        assertThat(r.out())
                .contains(done + ": dropped snapshot 10 of 4 shard(s)")
                .contains(done + ": dropped snapshot 11 of 4 shard(s)")
                .contains(done + ": dropped snapshot 13 of 4 shard(s)")
                .contains(gone + ": dropped the table (4 shard snapshot(s))")
                .contains("dropped 1 table(s) whole and 16 shard snapshot(s) in all");
        // The kept snapshot still restores what it held.
        for (int shard = 0; shard < 4; shard++) {
            ShardLease restored = kv.restore(done, shard, 12);
            assertThat(new String(kv.get(restored, key(shard)), StandardCharsets.UTF_8))
                    .isEqualTo("12");
        }

        // Only the rule spared the live table: said explicitly, it goes too.
        Result forced = gc("--keep-none", "--table-prefix", live, "--min-idle", "0", "--yes");
        assertThat(forced.exit()).as(forced.out() + forced.err()).isZero();
        assertThat(everything()).doesNotContainKey(live);
    }

    @Test
    void aKeptReferenceTheServerDoesNotHaveStopsEverything() throws Exception {
        Map<String, Set<String>> before = everything();

        Result r = gc("--kept-snapshots", keptFile(99, done, 4).toString(), "--yes");

        assertThat(r.exit()).isEqualTo(AdminCommands.EXIT_FAILED);
        assertThat(r.err())
                .contains("nothing dropped: 4 shard snapshot(s) that kept checkpoints reference")
                .contains("the first snapshot 99 of table '" + done + "' shard 0")
                .contains("another cluster");
        assertThat(everything()).isEqualTo(before);
    }

    @Test
    void aListCutShortOrUnreadablePathsStopEverything() throws Exception {
        Map<String, Set<String>> before = everything();
        Path full = keptFile(12, done, 4);
        List<String> lines = Files.readAllLines(full);
        Path cut = Files.write(temp.resolve("cut"), lines.subList(0, lines.size() - 2));

        Result truncated = gc("--kept-snapshots", cut.toString(), "--yes");
        assertThat(truncated.exit()).isEqualTo(AdminCommands.EXIT_FAILED);
        assertThat(truncated.err()).contains("is refused, nothing dropped").contains("no end line");

        Result noFile = gc("--kept-snapshots", temp.resolve("nope").toString(), "--yes");
        assertThat(noFile.exit()).isEqualTo(AdminCommands.EXIT_FAILED);
        assertThat(noFile.err()).contains("cannot read --kept-snapshots");

        // This JVM has no Flink: --keep says how to run it instead of reading nothing.
        Result noReader = gc("--keep", temp.toString(), "--yes");
        assertThat(noReader.exit()).isEqualTo(AdminCommands.EXIT_FAILED);
        assertThat(noReader.err()).contains("bin/taishan-kv-admin").contains("--kept-snapshots");

        assertThat(everything()).isEqualTo(before);
    }

    // ---- helpers

    /** Snapshot {@code id} holds, in each shard, key {@code k<shard>} = the id. */
    private static void withSnapshots(String table, int shards, Map<Long, Boolean> pinnedById) {
        kv.createTable(table, shards);
        List<ShardLease> leases = new ArrayList<>();
        for (int s = 0; s < shards; s++) {
            leases.add(kv.openShard(table, s));
        }
        for (Map.Entry<Long, Boolean> id : new TreeMap<>(pinnedById).entrySet()) {
            WriteBatch batch = new WriteBatch(table);
            for (ShardLease lease : leases) {
                batch.put(lease, key(lease.shard()), bytes(Long.toString(id.getKey())));
            }
            kv.write(batch);
            kv.snapshot(leases, id.getKey(), id.getValue());
        }
    }

    private Path keptFile(long id, String table, int shards) throws IOException {
        List<String> lines = new ArrayList<>();
        lines.add("taishan-kept-snapshots\t1");
        lines.add("checkpoint\t" + id + "\tcheckpoint\t1\t0\tfile:/checkpoints/job/chk-" + id);
        for (int s = 0; s < shards; s++) {
            lines.add("snapshot\t" + table + "\t" + s + "\t" + id);
        }
        lines.add("end\t1\t" + shards);
        return Files.write(temp.resolve("kept-" + id), lines);
    }

    /** Every table of this test: its shard snapshots as "shard/id". */
    private Map<String, Set<String>> everything() {
        Map<String, Set<String>> all = new TreeMap<>();
        for (TableInfo info : kv.listTables()) {
            if (info.name().startsWith(prefix) || info.name().equals(outside)) {
                Set<String> ids = new TreeSet<>();
                for (SnapshotInfo s : kv.listSnapshots(info.name())) {
                    ids.add(s.shard() + "/" + s.snapshotId());
                }
                all.put(info.name(), ids);
            }
        }
        return all;
    }

    private static Set<String> shardsOf(int shards, long id) {
        Set<String> ids = new TreeSet<>();
        for (int s = 0; s < shards; s++) {
            ids.add(s + "/" + id);
        }
        return ids;
    }

    private static byte[] key(int shard) {
        return bytes("k" + shard);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private Result gc(String... options) {
        List<String> args = new ArrayList<>(List.of("gc"));
        args.addAll(List.of(options));
        if (!args.contains("--table-prefix")) {
            args.addAll(List.of("--table-prefix", prefix));
        }
        if (!args.contains("--min-idle")) {
            args.addAll(List.of("--min-idle", MIN_IDLE.toMillis() + "ms"));
        }
        return admin(args.toArray(String[]::new));
    }

    private static Result admin(String... command) {
        AdminRun run = AdminRun.of(server.address(), command);
        return new Result(run.exit(), run.out(), run.err());
    }

    private record Result(int exit, String out, String err) {
        /** The line that starts with the table's name. */
        String line(String table) {
            return out.lines()
                    .filter(l -> l.startsWith(table + ":"))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no line for " + table + " in\n" + out));
        }

        /**
         * The rows of the table's snapshot list, as id, shards, pinned and action (size and created
         * left out: they vary).
         */
        List<List<String>> section(String table) {
            List<String> lines = out.lines().toList();
            int start = lines.indexOf(line(table));
            List<List<String>> rows = new ArrayList<>();
            for (int i = start + 2;
                    i < lines.size() && lines.get(i).matches("\\s*\\d+\\s.*");
                    i++) {
                String[] cells = lines.get(i).trim().split("\\s+", 8);
                rows.add(List.of(cells[0], cells[1], cells[2], cells[7]));
            }
            return rows;
        }
    }
}
