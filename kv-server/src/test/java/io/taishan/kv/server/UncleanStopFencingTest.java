package io.taishan.kv.server;

import static io.taishan.kv.server.KvStoreEndToEndTest.b;
import static io.taishan.kv.server.KvStoreEndToEndTest.s;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.protocol.ScanRange;
import io.taishan.kv.testing.KvServerProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A crash is never survived silently: the real server in a child JVM is killed with SIGKILL while a
 * client holds leases and sends nothing, then restarted on the same port and data dir. Whatever the
 * server cannot vouch for, every call under an old lease is refused; whatever it can (the WAL for a
 * process crash, a synced WAL for any crash), the lease goes on with nothing lost.
 */
class UncleanStopFencingTest {
    private static final String TABLE = "t";

    @TempDir Path tmp;

    @Test
    void withTheWalOffEveryCallUnderAnOldLeaseIsFencedAfterSigkill() throws IOException {
        Path data = tmp.resolve("data");
        Crash crash = crashWhileIdle(data, config(""), r -> {});
        ShardLease restored;
        try (KvServerProcess second = crash.restart();
                KvStore kv = connect(second)) {
            assertEveryCallFenced(kv, crash.written);
            // Also a shard that was flushed and idle: the node cannot tell which ones lost data.
            assertEveryCallFenced(kv, crash.flushed);

            restored = kv.restore(TABLE, crash.written.shard(), 1);
            assertThat(s(kv.get(restored, b("a")))).isEqualTo("snapshotted");
            assertThat(kv.get(restored, b("later"))).isNull();
            // The restore brings the snapshot's filter: there at once, with what was snapshotted.
            try (ShardFilter filter = kv.filters().orElseThrow().fetchFilter(restored)) {
                assertThat(FilterEndToEndTest.falseNegatives(filter, List.of("a"))).isEmpty();
            }
            kv.write(new WriteBatch(TABLE).put(restored, b("after"), b("restore")));
        }
        // Stopped cleanly (SIGTERM) and restarted: the old leases stay fenced, the new one is
        // valid with what it wrote.
        try (KvServerProcess third = crash.restart();
                KvStore kv = connect(third)) {
            assertFenced(() -> kv.get(crash.flushed, b("flushed")));
            assertThat(s(kv.get(restored, b("after")))).isEqualTo("restore");
            assertThat(third.recentOutput()).doesNotContain("stopped uncleanly");
        }
    }

    @Test
    void withTheWalOnAProcessCrashKeepsEveryLeaseAndEveryWrite() throws IOException {
        Path data = tmp.resolve("data");
        Crash crash = crashWhileIdle(data, config("wal.enabled = true\n"), r -> {});
        try (KvServerProcess second = crash.restart();
                KvStore kv = connect(second)) {
            assertThat(s(kv.get(crash.written, b("a")))).isEqualTo("after-snapshot");
            assertThat(s(kv.get(crash.written, b("later")))).isEqualTo("unflushed");
            assertThat(s(kv.get(crash.written, b("l")))).isEqualTo("x,y");
            // No filter was saved since those writes: the one served is rebuilt from the keys.
            try (ShardFilter filter = FilterEndToEndTest.fetch(kv, crash.written)) {
                assertThat(FilterEndToEndTest.falseNegatives(filter, List.of("a", "later", "l")))
                        .isEmpty();
            }
            kv.write(new WriteBatch(TABLE).append(crash.written, b("l"), b("z")));
            assertThat(s(kv.get(crash.written, b("l")))).isEqualTo("x,y,z");
            assertThat(second.recentOutput()).contains("leases stay valid");
        }
    }

    @Test
    void withAnUnsyncedWalAMachineCrashFencesEveryLease() throws IOException {
        Path data = tmp.resolve("data");
        Crash crash =
                crashWhileIdle(
                        data, config("wal.enabled = true\n"), UncleanStopFencingTest::reboot);
        try (KvServerProcess second = crash.restart();
                KvStore kv = connect(second)) {
            assertEveryCallFenced(kv, crash.written);
            assertThat(second.recentOutput()).contains("the machine may have crashed");
        }
    }

    @Test
    void withASyncedWalEvenAMachineCrashKeepsEveryLeaseAndEveryWrite() throws IOException {
        Path data = tmp.resolve("data");
        Crash crash =
                crashWhileIdle(
                        data,
                        config("wal.enabled = true\nwal.sync = true\n"),
                        UncleanStopFencingTest::reboot);
        try (KvServerProcess second = crash.restart();
                KvStore kv = connect(second)) {
            assertThat(s(kv.get(crash.written, b("later")))).isEqualTo("unflushed");
            assertThat(s(kv.get(crash.written, b("l")))).isEqualTo("x,y");
        }
    }

    // ---- the scenario

    private record Crash(
            Path data, String[] args, int port, ShardLease written, ShardLease flushed) {
        KvServerProcess restart() {
            String[] withPort = new String[args.length + 2];
            System.arraycopy(args, 0, withPort, 0, args.length);
            withPort[args.length] = "--port";
            withPort[args.length + 1] = Integer.toString(port);
            return KvServerProcess.start(data, withPort);
        }
    }

    /**
     * Shard 0 gets a snapshot then unflushed writes; shard 1 is written and its data flushed by a
     * snapshot; then the client sends nothing and the server is killed. {@code afterKill} may
     * change the data dir as the crash would have (a reboot).
     */
    private Crash crashWhileIdle(Path data, String[] args, Consumer<Path> afterKill) {
        KvServerProcess first = KvServerProcess.start(data, args);
        ShardLease written;
        ShardLease flushed;
        try (KvStore kv = connect(first)) {
            kv.createTable(TABLE, 2);
            written = kv.openShard(TABLE, 0);
            flushed = kv.openShard(TABLE, 1);
            kv.write(
                    new WriteBatch(TABLE)
                            .put(written, b("a"), b("snapshotted"))
                            .put(flushed, b("flushed"), b("yes"))
                            .snapshotMarker(written, 1, false)
                            .snapshotMarker(flushed, 1, false)
                            .put(written, b("a"), b("after-snapshot"))
                            .put(written, b("later"), b("unflushed"))
                            .append(written, b("l"), b("x"))
                            .append(written, b("l"), b("y")));
        } finally {
            first.kill();
        }
        afterKill.accept(data);
        return new Crash(data, args, first.port(), written, flushed);
    }

    /** What the data dir looks like after the machine rebooted: another boot id. */
    private static void reboot(Path data) {
        Path record = data.resolve("server-run");
        try {
            String text = Files.readString(record, StandardCharsets.UTF_8);
            assertThat(text).contains("state=running").contains("boot-id=");
            Files.writeString(
                    record,
                    text.replaceAll("boot-id=.*", "boot-id=00000000-before-the-reboot"),
                    StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private String[] config(String properties) throws IOException {
        Path file = Files.writeString(tmp.resolve("server.properties"), properties);
        return new String[] {"--config", file.toString()};
    }

    private static KvStore connect(KvServerProcess server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .build());
    }

    // ---- assertions

    /** Reads, writes of every kind, markers, snapshots and scans under the old lease. */
    private static void assertEveryCallFenced(KvStore kv, ShardLease old) {
        Map<String, ThrowingCallable> calls =
                Map.of(
                        "get", () -> kv.get(old, b("a")),
                        "multi-get", () -> kv.multiGet(old, List.of(b("a"), b("l"))),
                        "scan",
                                () -> {
                                    try (CloseableIterator<KvEntry> it =
                                            kv.scan(old, ScanRange.all(), 10, false)) {
                                        it.hasNext();
                                    }
                                },
                        "put", () -> kv.write(new WriteBatch(TABLE).put(old, b("a"), b("z"))),
                        "delete", () -> kv.write(new WriteBatch(TABLE).delete(old, b("a"))),
                        "delete-range",
                                () ->
                                        kv.write(
                                                new WriteBatch(TABLE)
                                                        .deleteRange(old, b("a"), b("z"))),
                        "append", () -> kv.write(new WriteBatch(TABLE).append(old, b("l"), b("z"))),
                        "marker",
                                () -> kv.write(new WriteBatch(TABLE).snapshotMarker(old, 2, false)),
                        "snapshot", () -> kv.snapshot(List.of(old), 3, false),
                        "fetch-filter", () -> kv.filters().orElseThrow().fetchFilter(old).close());
        calls.forEach((name, call) -> assertFenced(call));
    }

    private static void assertFenced(ThrowingCallable call) {
        assertThatThrownBy(call)
                .isInstanceOf(FencedException.class)
                .hasMessageContaining("stopped uncleanly");
    }
}
