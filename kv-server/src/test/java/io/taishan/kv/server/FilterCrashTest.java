package io.taishan.kv.server;

import static io.taishan.kv.server.KvStoreEndToEndTest.b;
import static io.taishan.kv.server.KvStoreEndToEndTest.s;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.taishan.bloom.FilterSizing;
import io.taishan.bloom.KeyHash;
import io.taishan.bloom.RebuildingFilter;
import io.taishan.kv.client.FilterUnavailableException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardStatus;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.storage.StorageTestAccess;
import io.taishan.kv.testing.KvServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A saved filter is never trusted past the writes made after it: the real server in a child JVM
 * with the WAL on saves a shard's filter when the shard is closed, is written again (which must
 * retire the saved file first) and killed with SIGKILL. The WAL keeps the lease and every write, so
 * the old file would now miss keys; the restarted server must serve no filter until it rebuilt one
 * from the keys, and then one with every key.
 */
class FilterCrashTest {
    private static final String TABLE = "t";

    @TempDir Path tmp;

    @Test
    void afterAProcessCrashWithTheWalOnTheFilterIsUnavailableUntilRebuiltThenComplete()
            throws IOException, InterruptedException {
        Path data = tmp.resolve("data");
        // Writer "a" makes the table's first store (id 1), writer "b" the second.
        Path savedFilter = data.resolve("tables/" + TABLE + "/stores/1/live/TAISHAN-FILTERS");
        List<String> before = keys("before-", 300);
        List<String> after = keys("after-", 300);
        ShardLease lease;
        int port;

        // One open store at most: opening shard 1's closes shard 0's, which saves its filter.
        KvServerProcess first =
                KvServerProcess.start(data, config("wal.enabled = true\nstores.max-open = 1\n"));
        port = first.port();
        try (KvStore kv = connect(first)) {
            kv.createTable(TABLE, 2);
            lease = kv.openShards(TABLE, new int[] {0}, "a", false).get(0);
            ShardLease other = kv.openShards(TABLE, new int[] {1}, "b", false).get(0);
            kv.write(put(new WriteBatch(TABLE), lease, before));
            kv.write(new WriteBatch(TABLE).put(other, b("x"), b("y")));
            FilterEndToEndTest.await(
                    "shard 0 to be closed with its filter saved",
                    () ->
                            kv.admin().orElseThrow().describeShards(TABLE).get(0).filterState()
                                    == ShardStatus.FilterState.SAVED);
            try (RebuildingFilter stale = readSaved(savedFilter)) {
                assertThat(absent(stale, before)).isEmpty();
                // What the saved file would get wrong once the next writes are in.
                assertThat(absent(stale, after).size()).isGreaterThan(280);
            }

            kv.write(put(new WriteBatch(TABLE), lease, after));
            assertThat(savedFilter).doesNotExist();
        } finally {
            first.kill();
        }

        // No filter memory at all: nothing can be rebuilt, so what is served is nothing.
        try (KvServerProcess second =
                        KvServerProcess.start(
                                data,
                                withPort(
                                        config(
                                                "wal.enabled = true\n"
                                                        + "filter.max-memory-bytes = 1k\n"),
                                        port));
                KvStore kv = connect(second)) {
            assertThat(second.recentOutput()).contains("leases stay valid");
            assertThat(s(kv.get(lease, b(after.get(0))))).isEqualTo("v");
            // Unavailable from the first fetch on; the reason names the memory limit once the
            // queued rebuild has tried to reserve it (under load, after the first fetch).
            long deadline = System.nanoTime() + 30_000_000_000L;
            String reason;
            do {
                Throwable failure =
                        catchThrowable(() -> kv.filters().orElseThrow().fetchFilter(lease));
                assertThat(failure)
                        .isInstanceOf(FilterUnavailableException.class)
                        .hasMessageContaining("table 't' shard 0 (epoch " + lease.epoch() + ")");
                reason = failure.getMessage();
                if (!reason.contains("filter.max-memory-bytes 1024")) {
                    Thread.sleep(20);
                }
            } while (!reason.contains("filter.max-memory-bytes 1024")
                    && System.nanoTime() < deadline);
            assertThat(reason).contains("filter.max-memory-bytes 1024");
            assertThat(kv.admin().orElseThrow().describeShards(TABLE).get(0).filterState())
                    .isEqualTo(ShardStatus.FilterState.UNAVAILABLE);
        }

        try (KvServerProcess third =
                        KvServerProcess.start(
                                data, withPort(config("wal.enabled = true\n"), port));
                KvStore kv = connect(third)) {
            List<String> all = new ArrayList<>(before);
            all.addAll(after);
            try (ShardFilter filter = FilterEndToEndTest.fetch(kv, lease)) {
                assertThat(FilterEndToEndTest.falseNegatives(filter, all)).isEmpty();
                // Rebuilt, not the empty filter of a new shard.
                assertThat(filter.version()).isPositive();
            }
        }
    }

    private static List<String> keys(String prefix, int count) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            keys.add(prefix + i);
        }
        return keys;
    }

    private static WriteBatch put(WriteBatch batch, ShardLease lease, List<String> keys) {
        for (String key : keys) {
            batch.put(lease, b(key), b("v"));
        }
        return batch;
    }

    private static RebuildingFilter readSaved(Path file) throws IOException {
        return StorageTestAccess.readSavedFilter(file, 0, FilterSizing.DEFAULT);
    }

    private static List<String> absent(RebuildingFilter filter, List<String> keys) {
        List<String> result = new ArrayList<>();
        for (String key : keys) {
            if (!filter.mightContain(KeyHash.hash(b(key)))) {
                result.add(key);
            }
        }
        return result;
    }

    private String[] config(String properties) throws IOException {
        Path file = Files.createTempFile(tmp, "server", ".properties");
        Files.writeString(file, properties);
        return new String[] {"--config", file.toString()};
    }

    private static String[] withPort(String[] args, int port) {
        String[] withPort = new String[args.length + 2];
        System.arraycopy(args, 0, withPort, 0, args.length);
        withPort[args.length] = "--port";
        withPort[args.length + 1] = Integer.toString(port);
        return withPort;
    }

    private static KvStore connect(KvServerProcess server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .build());
    }
}
