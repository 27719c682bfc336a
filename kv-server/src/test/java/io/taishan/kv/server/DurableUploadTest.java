package io.taishan.kv.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvUnavailableException;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.server.durable.FaultyFileSystem;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an UploadSnapshot leaves when it does not succeed, through a real node and {@code faulty://}
 * storage (the local disk with injected faults): a call whose one cut fails deletes every object it
 * wrote, those of the cut that went up too; a cut whose snapshots are dropped while it uploads
 * stays until the upload ends; a client that gives up (its deadline) stops the upload, which then
 * leaves nothing, and the cut goes.
 */
class DurableUploadTest {
    private static final String TABLE = "t";

    @TempDir Path tmp;

    @AfterEach
    void noFaults() {
        FaultyFileSystem.reset();
    }

    private String shared() {
        return FaultyFileSystem.uri(tmp.resolve("storage/shared"));
    }

    private String exclusive() {
        return FaultyFileSystem.uri(tmp.resolve("storage/chk-1"));
    }

    @Test
    void aFailedCallDeletesEveryObjectItWroteAlsoOfTheCutThatWentUp() throws Exception {
        try (DurableNode node = new DurableNode(tmp.resolve("n"), DurableNode.fileStorage());
                KvStore kv = node.connect()) {
            kv.createTable(TABLE, 4);
            // Two writers, two cuts: one of small files, one with an SST over 1 MiB.
            List<ShardLease> small = kv.openShards(TABLE, new int[] {0, 1}, "w1", false);
            List<ShardLease> big = kv.openShards(TABLE, new int[] {2, 3}, "w2", false);
            DurableNode.Model model = new DurableNode.Model(41);
            model.write(kv, small, 10, 100);
            model.write(kv, big, 200, 10_000);
            kv.snapshot(small, 1, false);
            kv.snapshot(big, 1, false);
            KvStore.Durable durable = kv.durable().orElseThrow();
            FaultyFileSystem.failWrites(100, 1 << 20);

            assertThatThrownBy(
                            () ->
                                    durable.uploadSnapshot(
                                            TABLE,
                                            1,
                                            new int[] {0, 1, 2, 3},
                                            shared(),
                                            exclusive(),
                                            Set.of()))
                    .isInstanceOf(KvException.class)
                    .hasMessageContaining("injected failure after")
                    .extracting(e -> ((KvException) e).code())
                    .isEqualTo(ErrorCode.STORAGE_ERROR);

            // The small cut's files went up (and were counted) before the call failed...
            assertThat(node.transferStats().uploadedFiles()).isPositive();
            // ...and were deleted with the rest: nothing of the call is left.
            assertThat(files(tmp.resolve("storage"))).isEmpty();

            FaultyFileSystem.reset();
            DurableSnapshot done =
                    durable.uploadSnapshot(
                            TABLE, 1, new int[] {0, 1, 2, 3}, shared(), exclusive(), Set.of());
            assertThat(done.cuts()).hasSize(2);
            assertThat(files(tmp.resolve("storage"))).isNotEmpty();
        }
    }

    @Test
    void aCutStaysWhileItUploadsAndAClientThatGivesUpStopsTheUpload() throws Exception {
        try (DurableNode node = new DurableNode(tmp.resolve("n"), DurableNode.fileStorage());
                KvStore kv = node.connect(Duration.ofSeconds(2))) {
            kv.createTable(TABLE, 2);
            List<ShardLease> leases = kv.openShards(TABLE, new int[] {0, 1}, "w", false);
            new DurableNode.Model(42).write(kv, leases, 50, 1_000);
            kv.snapshot(leases, 1, false);
            Path cuts = node.dataDir().resolve("tables/" + TABLE + "/cuts");
            assertThat(entries(cuts)).hasSize(1);
            CountDownLatch held = FaultyFileSystem.holdWrites();
            try {
                CompletableFuture<DurableSnapshot> upload =
                        CompletableFuture.supplyAsync(
                                () ->
                                        kv.durable()
                                                .orElseThrow()
                                                .uploadSnapshot(
                                                        TABLE,
                                                        1,
                                                        new int[] {0, 1},
                                                        shared(),
                                                        exclusive(),
                                                        Set.of()));
                awaitUntil(() -> FaultyFileSystem.streamsCreated() > 0, "the upload writes");

                assertThat(kv.dropSnapshot(TABLE, new int[] {0, 1}, 1)).isEqualTo(2);
                assertThat(entries(cuts)).as("the cut, while it uploads").hasSize(1);

                assertThatThrownBy(upload::join)
                        .hasCauseInstanceOf(KvUnavailableException.class)
                        .hasMessageContaining("DEADLINE_EXCEEDED");
                // The node stopped the transfer: it deleted what it wrote, and the cut went.
                awaitUntil(() -> node.transferStats().failedUploads() == 1, "a failed upload");
                awaitUntil(() -> entries(cuts).isEmpty(), "the cut deleted");
                assertThat(files(tmp.resolve("storage"))).isEmpty();
            } finally {
                held.countDown();
            }
        }
    }

    private interface Condition {
        boolean holds() throws Exception;
    }

    private static void awaitUntil(Condition condition, String what) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.holds()) {
            assertThat(System.nanoTime()).as(what).isLessThan(deadline);
            Thread.sleep(10);
        }
    }

    private static List<Path> entries(Path dir) throws Exception {
        try (Stream<Path> list = Files.list(dir)) {
            return list.toList();
        }
    }

    /** Every regular file under {@code dir}, none if it does not exist. */
    private static List<Path> files(Path dir) throws Exception {
        if (!Files.exists(dir)) {
            return List.of();
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            return walk.filter(Files::isRegularFile).toList();
        }
    }
}
