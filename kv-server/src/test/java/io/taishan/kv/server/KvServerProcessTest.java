package io.taishan.kv.server;

import static io.taishan.kv.server.KvStoreEndToEndTest.b;
import static io.taishan.kv.server.KvStoreEndToEndTest.s;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.testing.KvServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The real command line in a child JVM: it serves, SIGTERM flushes, SIGKILL keeps snapshots. */
class KvServerProcessTest {
    /** How a JVM ends on SIGTERM once its shutdown hooks have run: 128 + 15. */
    private static final int EXIT_ON_SIGTERM = 143;

    @TempDir Path tmp;

    private static KvStore connect(KvServerProcess server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .build());
    }

    @Test
    void sigtermShutsDownGracefullySoUnsnapshottedWritesSurvive() {
        Path data = tmp.resolve("data");
        ShardLease lease;
        KvServerProcess first = KvServerProcess.start(data);
        try {
            try (KvStore kv = connect(first)) {
                kv.createTable("t", 4);
                lease = kv.openShard("t", 2);
                kv.write(
                        new WriteBatch("t")
                                .put(lease, b("a"), b("1"))
                                .append(lease, b("l"), b("x"))
                                .snapshotMarker(lease, 1, true)
                                .put(lease, b("a"), b("2"))
                                .append(lease, b("l"), b("y")));
            }
        } finally {
            assertThat(first.stop()).isEqualTo(EXIT_ON_SIGTERM);
        }
        assertThat(first.isAlive()).isFalse();
        assertThat(first.recentOutput()).contains("shutting down").contains("stopped");

        try (KvServerProcess second = KvServerProcess.start(data);
                KvStore kv = connect(second)) {
            // The WAL is off: only the flush on SIGTERM can have kept these.
            assertThat(s(kv.get(lease, b("a")))).isEqualTo("2");
            assertThat(s(kv.get(lease, b("l")))).isEqualTo("x,y");
            assertThat(kv.listSnapshots("t"))
                    .singleElement()
                    .satisfies(snap -> assertThat(snap.pinned()).isTrue());
        }
    }

    @Test
    void afterSigkillTheSnapshotsAndEpochsAreIntact() {
        Path data = tmp.resolve("data");
        ShardLease lease;
        KvServerProcess first = KvServerProcess.start(data);
        try (KvStore kv = connect(first)) {
            kv.createTable("t", 1);
            lease = kv.openShard("t", 0);
            kv.write(
                    new WriteBatch("t")
                            .put(lease, b("a"), b("snapshotted"))
                            .snapshotMarker(lease, 7, false)
                            .put(lease, b("a"), b("maybe-lost")));
        } finally {
            first.kill();
        }
        try (KvServerProcess second = KvServerProcess.start(data);
                KvStore kv = connect(second)) {
            assertThat(kv.listSnapshots("t", 0))
                    .extracting(SnapshotInfo::snapshotId)
                    .containsExactly(7L);
            ShardLease restored = kv.restore("t", 0, 7);
            assertThat(restored.epoch()).isGreaterThan(lease.epoch());
            assertThat(s(kv.get(restored, b("a")))).isEqualTo("snapshotted");
        }
    }

    @Test
    void withTheWalOnUnflushedWritesSurviveSigkill() throws IOException {
        Path data = tmp.resolve("data");
        Path config = Files.writeString(tmp.resolve("server.properties"), "wal.enabled = true\n");
        ShardLease lease;
        KvServerProcess first = KvServerProcess.start(data, "--config", config.toString());
        try (KvStore kv = connect(first)) {
            kv.createTable("t", 1);
            lease = kv.openShard("t", 0);
            kv.write(
                    new WriteBatch("t")
                            .put(lease, b("a"), b("logged"))
                            .append(lease, b("l"), b("x")));
        } finally {
            first.kill();
        }
        try (KvServerProcess second = KvServerProcess.start(data, "--config", config.toString());
                KvStore kv = connect(second)) {
            assertThat(s(kv.get(lease, b("a")))).isEqualTo("logged");
            assertThat(s(kv.get(lease, b("l")))).isEqualTo("x");
        }
    }

    @Test
    void aTakenPortFailsTheStartWithAClearLine() {
        try (EmbeddedKvServer other = EmbeddedKvServer.start()) {
            assertThatThrownBy(
                            () ->
                                    KvServerProcess.start(
                                            tmp.resolve("data"),
                                            "--port",
                                            Integer.toString(other.port())))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("exited with code 1")
                    .hasMessageContaining(
                            "taishan-kv-server: cannot start: cannot listen on 127.0.0.1:"
                                    + other.port()
                                    + ": address already in use");
        }
    }
}
