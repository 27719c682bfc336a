package io.taishan.kv.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.testing.KvServerProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A restore is all or nothing, whatever kills the server while it runs: the real server in a child
 * JVM is killed with SIGKILL at a random moment of a restore of every shard of a writer (a full
 * failover) or of half of them (a region failover), then restarted on its data dir. Every shard the
 * call named is then either wholly at its state before (the newer checkpoint) or wholly at the
 * restored one, all of them the same way, never empty or mixed; the shards it did not name are
 * untouched; and no lease from before the crash is honoured (the WAL is off).
 */
class RestoreCrashTest {
    private static final String TABLE = "t";
    private static final int SHARDS = 64;
    private static final int KEYS = 20;
    private static final int[] KILL_AFTER_MILLIS = {0, 20, 60, 120, 250, 500};

    @TempDir Path tmp;

    @Test
    void aKilledRestoreLeavesEveryShardWhollyBeforeOrWhollyAfterIt() throws Exception {
        Path data = tmp.resolve("data");
        Random random = new Random(42);
        KvServerProcess server = KvServerProcess.start(data);
        int port = server.port();
        Set<Boolean> outcomes = new HashSet<>();
        try {
            for (int round = 0; round < 6; round++) {
                boolean half = round % 2 == 1;
                List<ShardLease> before;
                try (KvStore kv = connect(server)) {
                    kv.createTableIfAbsent(TABLE, SHARDS);
                    before = kv.openShards(TABLE, allShards(), "writer-" + round, true);
                    write(kv, before, "old-" + round, 1);
                    write(kv, before, "new-" + round, 2);
                }
                int[] restored = half ? range(0, SHARDS / 2) : allShards();
                List<ShardRestore> restores = new ArrayList<>();
                for (int s : restored) {
                    restores.add(new ShardRestore(s, TABLE, 1));
                }
                KvStore restoring = connect(server);
                String restorer = "restorer-" + round;
                CompletableFuture<List<ShardLease>> call =
                        CompletableFuture.supplyAsync(
                                () -> restoring.restoreShards(TABLE, restorer, restores));
                // Early kills hit the forks being made, late ones the commit or what follows it.
                Thread.sleep(KILL_AFTER_MILLIS[round] + random.nextInt(20));
                server.kill();
                call.handle((r, e) -> null).join();
                restoring.close();
                server = KvServerProcess.start(data, "--port", Integer.toString(port));

                try (KvStore kv = connect(server)) {
                    for (ShardLease lease : before) {
                        assertThatThrownBy(() -> kv.get(lease, key(0)))
                                .isInstanceOf(FencedException.class);
                    }
                    List<ShardLease> now = kv.openShards(TABLE, allShards(), "checker", false);
                    Boolean rolledBack = null;
                    for (ShardLease lease : now) {
                        boolean named = lease.shard() < restored.length;
                        String expectedIfNot = "new-" + round;
                        String value = value(kv, lease, 0);
                        if (!named) {
                            assertThat(value)
                                    .as("shard %d", lease.shard())
                                    .isEqualTo(expectedIfNot);
                        } else {
                            boolean thisRolledBack = value.equals("old-" + round);
                            if (!thisRolledBack) {
                                assertThat(value)
                                        .as("shard %d", lease.shard())
                                        .isEqualTo(expectedIfNot);
                            }
                            if (rolledBack == null) {
                                rolledBack = thisRolledBack;
                            }
                            assertThat(thisRolledBack)
                                    .as(
                                            "shard %d restored like the others of its call",
                                            lease.shard())
                                    .isEqualTo(rolledBack);
                        }
                        for (int k = 1; k < KEYS; k++) {
                            assertThat(value(kv, lease, k)).isEqualTo(value);
                        }
                    }
                    outcomes.add(rolledBack);
                }
            }
        } finally {
            server.close();
        }
        // Not an assertion on timing: a note of what the kills hit.
        System.out.println("restores that survived the kill (true) or not (false): " + outcomes);
    }

    private static void write(KvStore kv, List<ShardLease> leases, String value, long checkpoint) {
        WriteBatch batch = new WriteBatch(TABLE);
        for (ShardLease lease : leases) {
            for (int k = 0; k < KEYS; k++) {
                batch.put(lease, key(k), value.getBytes(StandardCharsets.UTF_8));
            }
            batch.snapshotMarker(lease, checkpoint, false);
        }
        kv.write(batch);
    }

    private static String value(KvStore kv, ShardLease lease, int k) {
        byte[] v = kv.get(lease, key(k));
        return v == null ? "<absent>" : new String(v, StandardCharsets.UTF_8);
    }

    private static byte[] key(int k) {
        return ("key-" + k).getBytes(StandardCharsets.UTF_8);
    }

    private static int[] allShards() {
        return range(0, SHARDS);
    }

    private static int[] range(int from, int to) {
        int[] shards = new int[to - from];
        for (int i = 0; i < shards.length; i++) {
            shards[i] = from + i;
        }
        return shards;
    }

    private static KvStore connect(KvServerProcess server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .maxAttempts(1)
                        .build());
    }
}
