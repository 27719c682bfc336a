package io.taishan.kv.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TtlState;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/** The admin CLI in-process against a real server, its effects checked through a client. */
class KvAdminMainTest {
    private static EmbeddedKvServer server;
    private static KvStore kv;

    /** A fresh table per test: two shards with snapshots 1 (unpinned), 2 (pinned), 3. */
    private String table;

    @BeforeAll
    static void start() {
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .ttlSweepInterval(java.time.Duration.ofMillis(50))
                                .build());
        kv = KvStores.connect(KvClientConfig.forAddresses(server.address()).build());
    }

    @AfterAll
    static void stop() {
        kv.close();
        server.close();
    }

    @BeforeEach
    void createTableWithSnapshots(TestInfo test) {
        table = "admin_" + test.getTestMethod().orElseThrow().getName();
        kv.createTable(table, 2);
        List<ShardLease> leases = List.of(kv.openShard(table, 0), kv.openShard(table, 1));
        write(leases, "a");
        kv.snapshot(leases, 1, false);
        write(leases, "b");
        kv.snapshot(leases, 2, true);
        write(leases, "c");
        kv.snapshot(leases, 3, false);
    }

    private void write(List<ShardLease> leases, String key) {
        WriteBatch batch = new WriteBatch(table);
        for (ShardLease lease : leases) {
            batch.put(lease, bytes(key + lease.shard()), bytes("value-" + key));
        }
        kv.write(batch);
    }

    @Test
    void healthListsTheNodeAsServing() {
        Result r = admin("health");

        assertThat(r.exit).isZero();
        assertThat(r.err).isEmpty();
        assertThat(r.row(server.address())).contains("kv1", "SERVING");
    }

    @Test
    void describeShowsEachShardsFilterAndHealthTheNodesFilterMemory() {
        Result open = admin("describe", table);

        assertThat(open.exit).isZero();
        assertThat(open.out).contains("filter").contains("est. fpp");
        for (String shard : List.of("0", "1")) {
            List<String> row = open.rowStartingWith(shard);
            assertThat(row).contains("available");
            assertThat(row.get(row.size() - 1)).matches("\\d+\\.\\d{3}%");
        }
        // ... status, tables, open shards, uptime, version, filter memory, limit, rebuilds
        List<String> health = admin("health").row(server.address());
        assertThat(health).contains("SERVING");
        assertThat(String.join(" ", health.subList(health.size() - 5, health.size())))
                .matches("[\\d.]+ (B|KiB|MiB) [\\d.]+ (KiB|MiB|GiB) 0");

        server.storage().closeAllIdleStores();
        Result closed = admin("describe", table);
        assertThat(closed.rowStartingWith("0")).contains("saved");
    }

    @Test
    void tablesCountsSnapshotsAndPinned() {
        Result r = admin("tables");

        assertThat(r.exit).isZero();
        List<String> row = r.row(table);
        // table, shards, created (date, time), snapshots, pinned, size (number, unit)
        assertThat(row.get(1)).isEqualTo("2");
        assertThat(row.get(4)).isEqualTo("6");
        assertThat(row.get(5)).isEqualTo("2");
        assertThat(r.out).containsPattern("\\d+ table\\(s\\)");
    }

    @Test
    void describeShowsTheTablesTtlStatesAndWhatExpiryDid() throws Exception {
        assertThat(admin("describe", table).out).contains("no state with a TTL registered");

        int state = 0x0abcdef1;
        kv.ttl()
                .orElseThrow()
                .registerTtlStates(
                        table, List.of(new TtlState(state, 60_000, TtlState.Layout.VALUE, 0)));
        ShardLease lease = kv.openShard(table, 0);
        byte[] key = java.nio.ByteBuffer.allocate(5).putInt(state).put((byte) 1).array();
        kv.write(
                new WriteBatch(table)
                        .put(lease, key, java.nio.ByteBuffer.allocate(8).putLong(0).array()));
        kv.ttl().orElseThrow().reportTtlTime(List.of(lease), 120_000).get();
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (kv.admin().orElseThrow().describeExpiry(table).expiredEntries() == 0) {
            assertThat(System.nanoTime()).as("a sweep within 30 s").isLessThan(deadline);
            Thread.sleep(50);
        }

        Result r = admin("describe", table);
        assertThat(r.exit).isZero();
        assertThat(r.out)
                .contains("ttl state     0abcdef1: 1m 0s, VALUE")
                .contains("expired       1 entries of")
                .contains("live entries  ~");
    }

    @Test
    void describeShowsEachShardWithItsNodeAndSnapshots() {
        Result r = admin("describe", table);

        assertThat(r.exit).isZero();
        assertThat(r.out).contains("table    " + table).contains("shards   2");
        for (String shard : List.of("0", "1")) {
            List<String> row = r.rowStartingWith(shard);
            assertThat(row.subList(0, 6)).containsExactly(shard, "kv1", "3", "1", "1", "3");
        }
        assertThat(r.out).contains("6 snapshot(s), 2 pinned");
    }

    @Test
    void snapshotsListsEveryShardSnapshotAndSummarisesPerId() {
        long sizeOfPinned = kv.listSnapshots(table, 0).get(1).sizeBytes();
        Result r = admin("snapshots", table);

        assertThat(r.exit).isZero();
        List<List<String>> perShard = r.snapshotRows();
        assertThat(perShard)
                .extracting(row -> row.get(0) + "/" + row.get(1) + "/" + row.get(2))
                .containsExactly("1/0/no", "1/1/no", "2/0/yes", "2/1/yes", "3/0/no", "3/1/no");
        // No durable checkpoints here: every snapshot is on the node only.
        assertThat(perShard).extracting(row -> row.get(3)).containsOnly("local");
        assertThat(perShard.get(2).get(4) + " " + perShard.get(2).get(5))
                .isEqualTo(Formats.size(sizeOfPinned));
        List<List<String>> perId = r.summaryRows();
        assertThat(perId)
                .extracting(
                        row ->
                                row.get(0)
                                        + " "
                                        + row.get(1)
                                        + " "
                                        + row.get(2)
                                        + " "
                                        + row.get(3)
                                        + " "
                                        + row.get(4))
                .containsExactly("1 2/2 0 2 0", "2 2/2 2 2 0", "3 2/2 0 2 0");
        assertThat(r.out).contains("3 snapshot id(s), 6 shard snapshot(s)");
    }

    @Test
    void snapshotsOfOneShard() {
        Result r = admin("snapshots", table, "--shard", "1");

        assertThat(r.exit).isZero();
        assertThat(r.snapshotRows()).extracting(row -> row.get(1)).containsOnly("1").hasSize(3);
        assertThat(r.summaryRows())
                .extracting(row -> row.get(0) + " " + row.get(1))
                .containsExactly("1 1/2", "2 1/2", "3 1/2");
    }

    @Test
    void shardOutOfRangeFails() {
        Result r = admin("snapshots", table, "--shard", "2");

        assertThat(r.exit).isEqualTo(1);
        assertThat(r.err)
                .isEqualTo("taishan-kv-admin: table '" + table + "' has shards 0..1, not 2\n");
    }

    @Test
    void dropSnapshotOnlyWithYes() {
        Result dryRun = admin("drop-snapshot", table, "1", "2");

        assertThat(dryRun.exit).isEqualTo(3);
        assertThat(dryRun.rowStartingWith("2")).startsWith("2", "1", "yes");
        assertThat(dryRun.out).contains("nothing dropped: add --yes to drop");
        assertThat(ids(1)).containsExactly(1L, 2L, 3L);

        Result dropped = admin("drop-snapshot", table, "1", "2", "--yes");

        assertThat(dropped.exit).isZero();
        assertThat(dropped.out)
                .isEqualTo("dropped snapshot 2 of table '" + table + "' shard 1 (pinned)\n");
        assertThat(ids(1)).containsExactly(1L, 3L);
        assertThat(ids(0)).containsExactly(1L, 2L, 3L);

        Result again = admin("drop-snapshot", table, "1", "2", "--yes");
        assertThat(again.exit).isEqualTo(1);
        assertThat(again.err)
                .isEqualTo("taishan-kv-admin: no snapshot 2 of table '" + table + "' shard 1\n");
    }

    @Test
    void dropSnapshotsBelowSparesPinnedAndNeedsYes() {
        Result dryRun = admin("drop-snapshots-below", table, "3");

        assertThat(dryRun.exit).isEqualTo(3);
        assertThat(dryRun.snapshotRows())
                .extracting(row -> row.get(0) + "/" + row.get(1))
                .containsExactly("1/0", "1/1");
        assertThat(dryRun.out)
                .contains("2 snapshot(s) below 3 would be dropped")
                .contains("2 pinned spared");
        assertThat(ids(0)).containsExactly(1L, 2L, 3L);

        Result dropped = admin("drop-snapshots-below", table, "3", "--yes");

        assertThat(dropped.exit).isZero();
        assertThat(dropped.out)
                .isEqualTo(
                        "dropped 2 snapshot(s) of table '"
                                + table
                                + "' below 3; 2 pinned spared\n");
        assertThat(ids(0)).containsExactly(2L, 3L);
        assertThat(ids(1)).containsExactly(2L, 3L);
    }

    @Test
    void dropTableOnlyWithYes() {
        Result dryRun = admin("drop-table", table);

        assertThat(dryRun.exit).isEqualTo(3);
        assertThat(dryRun.out)
                .startsWith(
                        "would drop table '" + table + "': 2 shard(s), 6 snapshot(s) (2 pinned)");
        assertThat(kv.describeTable(table)).isPresent();

        Result dropped = admin("--yes", "drop-table", table);

        assertThat(dropped.exit).isZero();
        assertThat(dropped.out).isEqualTo("dropped table '" + table + "'\n");
        assertThat(kv.describeTable(table)).isEqualTo(Optional.empty());
        assertThat(admin("tables").out).doesNotContain(table);
    }

    @Test
    void unknownTableIsOneLineAndExitOne() {
        for (String[] command :
                List.of(
                        new String[] {"describe", "nope"},
                        new String[] {"snapshots", "nope"},
                        new String[] {"drop-snapshot", "nope", "0", "1", "--yes"},
                        new String[] {"drop-snapshots-below", "nope", "1", "--yes"},
                        new String[] {"drop-table", "nope", "--yes"})) {
            Result r = admin(command);

            assertThat(r.exit).as(Arrays.toString(command)).isEqualTo(1);
            assertThat(r.out).isEmpty();
            assertThat(r.err).isEqualTo("taishan-kv-admin: unknown table 'nope'\n");
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void unreachableAddressIsNamed() throws IOException {
        String dead;
        try (ServerSocket socket = new ServerSocket(0)) {
            dead = "127.0.0.1:" + socket.getLocalPort();
        }

        Result r = run("--address", dead, "--timeout-ms", "500", "tables");

        assertThat(r.exit).isEqualTo(1);
        assertThat(r.out).isEmpty();
        assertThat(r.err).startsWith("taishan-kv-admin: cannot reach " + dead + ": ");
        assertThat(r.err.lines()).hasSize(1);
    }

    @Test
    void badUsageExitsTwo() {
        List<String[]> bad =
                List.of(
                        new String[] {},
                        new String[] {"--address", server.address()},
                        new String[] {"tables"},
                        new String[] {"--address", "no-port", "tables"},
                        new String[] {"--address", server.address(), "frobnicate"},
                        new String[] {"--address", server.address(), "describe"},
                        new String[] {
                            "--address", server.address(), "drop-snapshot", "t", "x", "1"
                        },
                        new String[] {
                            "--address", server.address(), "drop-snapshots-below", "t", "1.5"
                        },
                        new String[] {"--address", server.address(), "tables", "--yes"},
                        new String[] {
                            "--address", server.address(), "describe", "t", "--shard", "1"
                        },
                        new String[] {"--address", server.address(), "snapshots", "t", "--shard"},
                        new String[] {"--address", server.address(), "--bogus", "tables"});
        for (String[] args : bad) {
            Result r = run(args);

            assertThat(r.exit).as(Arrays.toString(args)).isEqualTo(2);
            assertThat(r.out).as(Arrays.toString(args)).isEmpty();
            assertThat(r.err)
                    .as(Arrays.toString(args))
                    .startsWith("taishan-kv-admin: ")
                    .contains("usage: taishan-kv-admin");
        }
        assertThat(ids(0)).containsExactly(1L, 2L, 3L);
    }

    @Test
    void helpPrintsUsage() {
        Result r = run("--help");

        assertThat(r.exit).isZero();
        assertThat(r.err).isEmpty();
        assertThat(r.out)
                .startsWith("usage: taishan-kv-admin")
                .contains("drop-snapshots-below <table> <id> [--yes]");
    }

    // ---- helpers

    private List<Long> ids(int shard) {
        return kv.listSnapshots(table, shard).stream().map(SnapshotInfo::snapshotId).toList();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static Result admin(String... command) {
        String[] args = new String[command.length + 2];
        args[0] = "--address";
        args[1] = server.address();
        System.arraycopy(command, 0, args, 2, command.length);
        return run(args);
    }

    private static Result run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            exit = KvAdminMain.run(args, o, e);
        }
        return new Result(
                exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** What one run printed; rows are lines split on runs of blanks. */
    private record Result(int exit, String out, String err) {
        List<List<String>> rows(String firstCell) {
            return cells().stream().filter(row -> row.get(0).equals(firstCell)).toList();
        }

        List<String> rowStartingWith(String firstCell) {
            List<List<String>> rows = rows(firstCell);
            assertThat(rows).as("rows starting with '%s' in%n%s", firstCell, out).hasSize(1);
            return rows.get(0);
        }

        /** The one row containing the cell. */
        List<String> row(String cell) {
            List<List<String>> rows = cells().stream().filter(row -> row.contains(cell)).toList();
            assertThat(rows).as("rows with '%s' in%n%s", cell, out).hasSize(1);
            return rows.get(0);
        }

        /** Rows of a table of shard snapshots: id, shard, pinned, where, size, files, created. */
        List<List<String>> snapshotRows() {
            return cells().stream()
                    .filter(
                            row ->
                                    row.size() == 9
                                            && row.get(0).matches("\\d+")
                                            && row.get(1).matches("\\d+"))
                    .toList();
        }

        /**
         * Rows of the per-id summary: id, shards/of, pinned, local, in storage, size, files,
         * created.
         */
        List<List<String>> summaryRows() {
            return cells().stream()
                    .filter(row -> row.size() == 10 && row.get(1).matches("\\d+/\\d+"))
                    .toList();
        }

        private List<List<String>> cells() {
            List<List<String>> rows = new ArrayList<>();
            for (String line : out.lines().toList()) {
                if (!line.isBlank()) {
                    rows.add(List.of(line.trim().split("\\s+")));
                }
            }
            return rows;
        }
    }
}
