package io.taishan.kv.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableRestore;
import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.server.durable.CutTransfers;
import io.taishan.kv.server.durable.FaultyFileSystem;
import io.taishan.kv.server.storage.DurableFiles;
import io.taishan.kv.testing.KvServerProcess;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node killed (SIGKILL, the real server in a child JVM) while it downloads a cut from checkpoint
 * storage starts again clean: no download left in {@code tmp/}, no half-made cut, no snapshot of
 * it; the same restore then downloads it again and brings every key back exactly. The storage is
 * {@code faulty://} (the local disk with every read slowed down, so the kill lands mid-download for
 * sure: the test waits for the download's staging directory before it kills).
 */
class DurableFetchCrashTest {
    private static final String TABLE = "t";
    private static final int SHARDS = 4;

    @TempDir Path tmp;

    @Test
    void aNodeKilledMidDownloadStartsAgainCleanAndTheRestoreThenSucceeds() throws Exception {
        Path data = tmp.resolve("data");
        Path config = tmp.resolve("durable.properties");
        Files.writeString(
                config,
                "durable.enabled = true\n"
                        + "durable.transfer-threads = 2\n"
                        + "durable.flink."
                        + FaultyFileSystem.READ_DELAY_KEY
                        + " = 4\n");
        int[] all = IntStream.range(0, SHARDS).toArray();
        KvServerProcess server = KvServerProcess.start(data, "--config", config.toString());
        int port = server.port();
        try {
            DurableSnapshot snapshot;
            Map<Integer, TreeMap<String, String>> atSnapshot;
            try (KvStore kv = connect(server)) {
                kv.createTable(TABLE, SHARDS);
                List<ShardLease> leases = kv.openShards(TABLE, all, "w", false);
                DurableNode.Model model = new DurableNode.Model(21);
                // About 30 MiB of incompressible values: a download of hundreds of reads.
                for (int batch = 0; batch < 3; batch++) {
                    model.write(kv, leases, 160, 32 << 10);
                }
                kv.snapshot(leases, 1, false);
                atSnapshot = model.copy();
                snapshot =
                        kv.durable()
                                .orElseThrow()
                                .uploadSnapshot(
                                        TABLE,
                                        1,
                                        all,
                                        FaultyFileSystem.uri(tmp.resolve("checkpoints/shared")),
                                        FaultyFileSystem.uri(tmp.resolve("checkpoints/chk-1")),
                                        Set.of());
            }
            server.close();
            DurableFiles.deleteTree(data);
            server = start(data, config, port);

            KvStore restoring = connect(server);
            restoring.createTable(TABLE, SHARDS);
            CompletableFuture<DurableRestore> call =
                    CompletableFuture.supplyAsync(
                            () ->
                                    restoring
                                            .durable()
                                            .orElseThrow()
                                            .restoreShards(
                                                    TABLE,
                                                    "w",
                                                    restores(all, snapshot),
                                                    snapshot.cuts()));
            awaitDownloadUnderWay(data.resolve("tmp"), call);
            server.kill();
            call.handle((r, e) -> null).join();
            restoring.close();
            server = start(data, config, port);

            assertThat(entries(data.resolve("tmp"))).as("tmp/ after the restart").isEmpty();
            assertThat(entries(data.resolve("tables/" + TABLE + "/cuts"))).isEmpty();
            try (KvStore kv = connect(server)) {
                assertThat(kv.listSnapshots(TABLE)).isEmpty();
                DurableRestore restored =
                        kv.durable()
                                .orElseThrow()
                                .restoreShards(
                                        TABLE, "w", restores(all, snapshot), snapshot.cuts());
                assertThat(restored.downloadedBytes()).isPositive();
                assertThat(DurableNode.read(kv, restored.leases())).isEqualTo(atSnapshot);
            }
        } finally {
            server.close();
        }
    }

    /** Until a download's staging directory is in {@code tmp/}: files are arriving. */
    private static void awaitDownloadUnderWay(Path tmpDir, CompletableFuture<?> call)
            throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            for (Path p : entries(tmpDir)) {
                if (CutTransfers.isDownloadLeftover(p) && !entries(p).isEmpty()) {
                    return;
                }
            }
            assertThat(call).as("the restore ended before its download was seen").isNotDone();
            assertThat(System.nanoTime()).as("a download under way").isLessThan(deadline);
            Thread.sleep(2);
        }
    }

    private static KvServerProcess start(Path data, Path config, int port) {
        return KvServerProcess.start(
                data, "--port", Integer.toString(port), "--config", config.toString());
    }

    private static List<ShardRestore> restores(int[] shards, DurableSnapshot snapshot) {
        DurableCut cut = snapshot.cuts().get(0);
        List<ShardRestore> restores = new ArrayList<>();
        for (int s : shards) {
            restores.add(new ShardRestore(s, TABLE, 1, cut.cutId()));
        }
        return restores;
    }

    private static List<Path> entries(Path dir) throws Exception {
        try (Stream<Path> list = Files.list(dir)) {
            return list.toList();
        } catch (NoSuchFileException e) {
            return List.of(); // not made yet, or gone with a finished download
        }
    }

    private static KvStore connect(KvServerProcess server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .maxAttempts(1)
                        .build());
    }
}
