package io.taishan.kv.server;

import static io.taishan.kv.server.KvStoreEndToEndTest.b;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardStatus;
import io.taishan.kv.client.WriteBatch;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ShardStatus.lastActiveMillis}, what the admin gc's rule for running jobs' tables rests on:
 * leases, writes and TTL clock reports move it, reads of an open shard do not, and a restart does
 * not forget it.
 */
class ShardActivityTest {
    /** File times come from the kernel's coarse clock, which may trail Java's by a tick. */
    private static final long FILE_CLOCK_SLACK_MILLIS = 50;

    @TempDir Path dataDir;

    private EmbeddedKvServer start() {
        return EmbeddedKvServer.start(KvServerConfig.builder().dataDir(dataDir).build());
    }

    @Test
    void leasesWritesAndTtlReportsCountReadsDoNotAndARestartRemembers() throws Exception {
        long writtenAt;
        try (EmbeddedKvServer server = start();
                KvStore kv =
                        KvStores.connect(KvClientConfig.forAddresses(server.address()).build())) {
            kv.createTable("t", 2);
            assertThat(activity(kv)).as("shards never opened are not described").isEmpty();

            long beforeLease = System.currentTimeMillis();
            ShardLease lease = kv.openShard("t", 0);
            long leased = activity(kv).get(0);
            assertThat(leased).isBetween(beforeLease, System.currentTimeMillis());
            assertThat(activity(kv)).as("a shard never leased").doesNotContainKey(1);

            Thread.sleep(20);
            kv.write(new WriteBatch("t").put(lease, b("k"), b("v")));
            writtenAt = activity(kv).get(0);
            assertThat(writtenAt).isGreaterThan(leased);

            Thread.sleep(20);
            kv.get(lease, b("k"));
            kv.multiGet(lease, List.of(b("k"), b("x")));
            assertThat(activity(kv).get(0))
                    .as("after reads of the open shard")
                    .isEqualTo(writtenAt);

            Thread.sleep(20);
            kv.ttl().orElseThrow().reportTtlTime(List.of(lease), 1_000).get();
            assertThat(activity(kv).get(0)).isGreaterThan(writtenAt);
            writtenAt = activity(kv).get(0);
        }

        try (EmbeddedKvServer server = start();
                KvStore kv =
                        KvStores.connect(KvClientConfig.forAddresses(server.address()).build())) {
            // The graceful stop flushed the write: its files carry the time across the restart.
            assertThat(activity(kv).get(0))
                    .isGreaterThanOrEqualTo(writtenAt - FILE_CLOCK_SLACK_MILLIS)
                    .isLessThanOrEqualTo(System.currentTimeMillis());
            assertThat(activity(kv)).doesNotContainKey(1);
        }
    }

    private static Map<Integer, Long> activity(KvStore kv) {
        return kv.admin().orElseThrow().describeShards("t").stream()
                .collect(Collectors.toMap(ShardStatus::shard, ShardStatus::lastActiveMillis));
    }
}
