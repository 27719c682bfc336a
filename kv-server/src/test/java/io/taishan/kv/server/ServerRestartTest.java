package io.taishan.kv.server;

import static io.taishan.kv.server.KvStoreEndToEndTest.b;
import static io.taishan.kv.server.KvStoreEndToEndTest.s;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableInfo;
import io.taishan.kv.client.WriteBatch;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A graceful restart on the same data dir keeps tables, data, epochs and snapshots. */
class ServerRestartTest {
    @TempDir Path dataDir;

    private EmbeddedKvServer start() {
        return EmbeddedKvServer.start(
                KvServerConfig.builder()
                        .dataDir(dataDir)
                        .blockCacheBytes(16 << 20)
                        .writeBufferBytes(8 << 20)
                        .build());
    }

    private static KvStore connect(EmbeddedKvServer server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .build());
    }

    @Test
    void restartKeepsTablesDataEpochsAndSnapshots() {
        TableInfo table;
        ShardLease before;
        try (EmbeddedKvServer server = start();
                KvStore kv = connect(server)) {
            table = kv.createTable("t", 8);
            kv.createTable("empty", 3);
            before = kv.openShard("t", 6);
            kv.write(
                    new WriteBatch("t")
                            .put(before, b("a"), b("1"))
                            .append(before, b("l"), b("x"))
                            .snapshotMarker(before, 5, true)
                            .put(before, b("a"), b("2"))
                            .append(before, b("l"), b("y")));
        }
        assertThat(dataDir).exists();

        try (EmbeddedKvServer server = start();
                KvStore kv = connect(server)) {
            assertThat(kv.listTables()).extracting(TableInfo::name).containsExactly("empty", "t");
            assertThat(kv.describeTable("t")).contains(table);
            // The WAL is off: the graceful stop flushed, so the unsnapshotted writes are here.
            assertThat(s(kv.get(before, b("a")))).isEqualTo("2");
            assertThat(s(kv.get(before, b("l")))).isEqualTo("x,y");
            assertThat(kv.listSnapshots("t"))
                    .singleElement()
                    .satisfies(
                            snap -> {
                                assertThat(snap.shard()).isEqualTo(6);
                                assertThat(snap.snapshotId()).isEqualTo(5);
                                assertThat(snap.pinned()).isTrue();
                            });

            // Epochs only grow across restarts.
            ShardLease after = kv.openShard("t", 6);
            assertThat(after.epoch()).isGreaterThan(before.epoch());
            assertThatThrownBy(() -> kv.get(before, b("a"))).isInstanceOf(FencedException.class);
            ShardLease restored = kv.restore("t", 6, 5);
            assertThat(s(kv.get(restored, b("a")))).isEqualTo("1");
            assertThat(s(kv.get(restored, b("l")))).isEqualTo("x");
            List<SnapshotInfo> snaps = kv.listSnapshots("t", 6);
            assertThat(snaps).hasSize(1);
        }
    }
}
