package io.taishan.kv.server.durable;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.durable.TransferFailedException.Reason;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Uploads of cut-like directories to {@code file://} and, where a fault is needed, to {@code
 * faulty://} (Flink's local file system with injected failures): what is uploaded, packed and
 * reused, and that a failed, cancelled or timed-out call reports nothing and leaves nothing but the
 * files that were there before it.
 */
class CutUploadTest {
    private static final String UUID_NAME =
            "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

    @TempDir Path tmp;
    private CutTransfers transfers;

    @BeforeEach
    void start() {
        FaultyFileSystem.reset();
        transfers = CutTransfers.start(Cuts.options(Duration.ofSeconds(60)));
    }

    @AfterEach
    void stop() {
        transfers.close();
        FaultyFileSystem.reset();
    }

    @Test
    void eachDataFileBecomesAnObjectOfItsOwnAndTheOtherFilesOnePack() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.typical(cut, 1);
        Path shared = tmp.resolve("shared");
        Path exclusive = tmp.resolve("chk-1");

        UploadResult result =
                transfers
                        .upload(
                                new UploadRequest(
                                        "store-1",
                                        cut,
                                        names,
                                        shared.toUri().toString(),
                                        exclusive.toUri().toString(),
                                        Map.of()))
                        .await();

        assertThat(result.uploaded())
                .extracting(CutFile::fileName)
                .containsExactly("000010.sst", "000011.sst", "000012.sst");
        long sstBytes = 0;
        for (CutFile file : result.uploaded()) {
            Remote.assertCopyOf(file.remote(), cut.resolve(file.fileName()));
            assertThat(Remote.file(file.remote()).getParent()).isEqualTo(shared);
            assertThat(Remote.file(file.remote()).getFileName().toString()).matches(UUID_NAME);
            sstBytes += file.remote().sizeBytes();
        }
        assertThat(Cuts.names(shared)).hasSize(3);
        assertThat(result.packedFileNames())
                .containsExactly("CURRENT", "MANIFEST-000009", "OPTIONS-000007", "TAISHAN-CUT");
        assertThat(Cuts.names(exclusive))
                .containsExactly(Remote.file(result.metadataPack()).getFileName().toString());
        byte[] pack = Files.readAllBytes(Remote.file(result.metadataPack()));
        assertThat(result.metadataPack().sizeBytes()).isEqualTo(pack.length);
        assertThat(result.metadataPack().crc32c()).isEqualTo(Remote.crc32c(pack));
        assertThat(result.reused()).isEmpty();
        assertThat(result.uploadedBytes()).isEqualTo(sstBytes + pack.length);
        assertThat(transfers.stats().uploadedFiles()).isEqualTo(4);
        assertThat(transfers.stats().uploadedBytes()).isEqualTo(result.uploadedBytes());
    }

    @Test
    void reusesOnlyTheCopiesTheCallerAllowsAndUploadsTheRest() throws Exception {
        Path cut1 = tmp.resolve("cut1");
        List<String> names1 = Cuts.typical(cut1, 1);
        String shared = tmp.resolve("shared").toUri().toString();
        UploadResult first =
                transfers.upload(UploadRequest.of("store-1", cut1, names1, shared)).await();

        // The store's next cut: two files kept (links, as a cut has them), one compacted away,
        // one new, new metadata.
        Path cut2 = tmp.resolve("cut2");
        Files.createDirectories(cut2);
        Files.createLink(cut2.resolve("000010.sst"), cut1.resolve("000010.sst"));
        Files.createLink(cut2.resolve("000011.sst"), cut1.resolve("000011.sst"));
        List<String> names2 = new ArrayList<>(List.of("000010.sst", "000011.sst"));
        names2.addAll(Cuts.write(cut2, 2, Map.of("000013.sst", 50_000, "MANIFEST-000014", 900)));
        // Flink confirmed a checkpoint holding 000010.sst's copy, not 000011.sst's.
        Set<String> allowed = new HashSet<>();
        allowed.add(copyOf(first, "000010.sst").path());
        FileOrigins origins = first.origins();

        UploadResult second =
                transfers
                        .upload(
                                UploadRequest.of("store-1", cut2, names2, shared)
                                        .withReusable(origins.reusable(allowed::contains)))
                        .await();

        assertThat(second.reused())
                .containsExactly(new CutFile("000010.sst", copyOf(first, "000010.sst")));
        assertThat(second.uploaded())
                .extracting(CutFile::fileName)
                .containsExactly("000011.sst", "000013.sst");
        assertThat(copyOf(second, "000011.sst").path())
                .as("not allowed: uploaded again, under a new name")
                .isNotEqualTo(copyOf(first, "000011.sst").path());
        for (CutFile file : second.uploaded()) {
            Remote.assertCopyOf(file.remote(), cut2.resolve(file.fileName()));
        }
        assertThat(second.uploadedBytes())
                .isEqualTo(
                        Files.size(cut2.resolve("000011.sst"))
                                + Files.size(cut2.resolve("000013.sst"))
                                + second.metadataPack().sizeBytes());
        assertThat(second.reusedBytes()).isEqualTo(Files.size(cut1.resolve("000010.sst")));
        assertThat(second.dataFiles())
                .extracting(CutFile::fileName)
                .containsExactlyInAnyOrder("000010.sst", "000011.sst", "000013.sst");
        assertThat(transfers.stats().reusedFiles()).isEqualTo(1);
        assertThat(transfers.stats().reusedBytes()).isEqualTo(second.reusedBytes());
    }

    @Test
    void aCopyOfAnotherStoreOrAnotherSizeIsNotReused() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.write(cut, 3, Map.of("000010.sst", 1_000, "000011.sst", 2_000));
        RemoteFile somewhere =
                new RemoteFile(tmp.resolve("elsewhere").toUri().toString(), 1_000, 7);
        Map<FileIdentity, RemoteFile> offered =
                Map.of(
                        // Same name and size, another store: another file.
                        new FileIdentity("store-2", "000010.sst", 1_000), somewhere,
                        // The identity matches, the copy does not have the file's size.
                        new FileIdentity("store-1", "000011.sst", 2_000), somewhere);

        UploadResult result =
                transfers
                        .upload(
                                UploadRequest.of(
                                                "store-1",
                                                cut,
                                                names,
                                                tmp.resolve("shared").toUri().toString())
                                        .withReusable(offered))
                        .await();

        assertThat(result.reused()).isEmpty();
        assertThat(result.uploaded()).hasSize(2);
        assertThat(result.metadataPack()).isNull();
        assertThat(result.packedFileNames()).isEmpty();
    }

    @Test
    void aMissingLocalFileFailsTheCallBeforeAnythingIsWritten() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = new ArrayList<>(Cuts.typical(cut, 1));
        names.add("000099.sst");
        Path shared = tmp.resolve("shared");

        TransferFailedException e =
                failure(
                        transfers.upload(
                                UploadRequest.of("s", cut, names, shared.toUri().toString())));

        assertThat(e.reason()).isEqualTo(Reason.LOCAL);
        assertThat(e.path()).isEqualTo(cut.resolve("000099.sst").toString());
        assertThat(e)
                .hasMessageContaining("000099.sst")
                .hasMessageContaining("NoSuchFileException");
        assertThat(Cuts.names(shared)).isEmpty();
        assertThat(transfers.stats().failedUploads()).isEqualTo(1);
    }

    @Test
    void aTargetThatRefusesWritesFailsTheCallNamingThePath() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.typical(cut, 1);
        Path shared = Files.createDirectories(tmp.resolve("shared"));
        try (ReadOnlyDir locked = ReadOnlyDir.lock(shared)) {
            TransferFailedException e =
                    failure(
                            transfers.upload(
                                    UploadRequest.of("s", cut, names, shared.toUri().toString())));

            assertThat(e.reason()).isEqualTo(Reason.STORAGE);
            assertThat(e.path()).startsWith("file:" + shared);
            assertThat(e)
                    .hasMessageContaining("cannot create file:" + shared)
                    .hasMessageContaining(locked.refusal())
                    // A refusal does not pass by itself: failed at the first attempt, not after
                    // every retry and its backoff (Flink's file:// reports it as a
                    // FileNotFoundException, not an AccessDeniedException).
                    .hasMessageNotContaining("attempts");
        }
        assertThat(Cuts.names(shared)).isEmpty();
    }

    @Test
    void aWriteThatFailsOnceIsRetriedUnderTheSameName() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.write(cut, 4, Map.of("000010.sst", 500_000));
        Path shared = tmp.resolve("shared");
        FaultyFileSystem.failWrites(1, 100_000);

        UploadResult result =
                transfers
                        .upload(UploadRequest.of("s", cut, names, FaultyFileSystem.uri(shared)))
                        .await();

        assertThat(FaultyFileSystem.streamsCreated()).isEqualTo(2);
        assertThat(transfers.stats().retries()).isEqualTo(1);
        assertThat(Cuts.names(shared))
                .containsExactly(
                        Remote.file(copyOf(result, "000010.sst")).getFileName().toString());
        Remote.assertCopyOf(copyOf(result, "000010.sst"), cut.resolve("000010.sst"));
    }

    @Test
    void aFileThatKeepsFailingFailsTheCallAndOnlyWhatTheCallWroteIsDeleted() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.typical(cut, 1);
        Path shared = Files.createDirectories(tmp.resolve("shared"));
        // A file of an earlier checkpoint: the JobManager's, never ours to delete.
        Files.writeString(shared.resolve("referenced-by-flink"), "kept");
        // Every stream fails past 100 kB: 000010.sst (300 kB) fails, the others complete first.
        FaultyFileSystem.failWrites(Integer.MAX_VALUE, 100_000);

        Transfer<UploadResult> upload =
                transfers.upload(UploadRequest.of("s", cut, names, FaultyFileSystem.uri(shared)));
        TransferFailedException e = failure(upload);
        upload.settled().get(30, TimeUnit.SECONDS);

        assertThat(e.reason()).isEqualTo(Reason.STORAGE);
        assertThat(e).hasMessageContaining("injected failure").hasMessageEndingWith("(3 attempts)");
        assertThat(Cuts.names(shared)).containsExactly("referenced-by-flink");
        assertThat(transfers.stats().failedUploads()).isEqualTo(1);
        assertThat(transfers.stats().retries()).isEqualTo(2);
    }

    @Test
    void aCancelledUploadReportsNothingAndLeavesNothing() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.typical(cut, 1);
        Path shared = Files.createDirectories(tmp.resolve("shared"));
        Files.writeString(shared.resolve("referenced-by-flink"), "kept");
        CountDownLatch held = FaultyFileSystem.holdWrites();

        Transfer<UploadResult> upload =
                transfers.upload(UploadRequest.of("s", cut, names, FaultyFileSystem.uri(shared)));
        awaitStreams(4);
        upload.cancel();

        TransferFailedException e = failure(upload);
        upload.settled().get(30, TimeUnit.SECONDS);
        held.countDown();
        assertThat(e.reason()).isEqualTo(Reason.CANCELLED);
        assertThat(e).hasMessageContaining("cancelled");
        // The empty 000012.sst never waits for a write: it completed, and was deleted too.
        assertThat(Cuts.names(shared)).containsExactly("referenced-by-flink");
    }

    @Test
    void anUploadPastItsDeadlineFailsAsTimedOutAndLeavesNothing() throws Exception {
        transfers.close();
        transfers = CutTransfers.start(Cuts.options(Duration.ofMillis(500)));
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.typical(cut, 1);
        Path shared = tmp.resolve("shared");
        CountDownLatch held = FaultyFileSystem.holdWrites();

        Transfer<UploadResult> upload =
                transfers.upload(UploadRequest.of("s", cut, names, FaultyFileSystem.uri(shared)));
        TransferFailedException e = failure(upload);
        upload.settled().get(30, TimeUnit.SECONDS);
        held.countDown();

        assertThat(e.reason()).isEqualTo(Reason.TIMED_OUT);
        assertThat(e).hasMessageContaining("timed out after 500 ms (durable.transfer-timeout)");
        assertThat(Cuts.names(shared)).isEmpty();
    }

    @Test
    void interruptingTheThreadThatWaitsCancelsTheUpload() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.typical(cut, 1);
        Path shared = tmp.resolve("shared");
        CountDownLatch held = FaultyFileSystem.holdWrites();
        Transfer<UploadResult> upload =
                transfers.upload(UploadRequest.of("s", cut, names, FaultyFileSystem.uri(shared)));
        AtomicReference<Throwable> waited = new AtomicReference<>();
        Thread waiter =
                new Thread(
                        () -> {
                            try {
                                upload.await();
                            } catch (Throwable t) {
                                waited.set(t);
                            }
                        });
        waiter.start();
        awaitStreams(1);

        waiter.interrupt();
        waiter.join(10_000);
        upload.settled().get(30, TimeUnit.SECONDS);
        held.countDown();

        assertThat(waited.get()).isInstanceOf(InterruptedException.class);
        assertThat(failure(upload).reason()).isEqualTo(Reason.CANCELLED);
        assertThat(Cuts.names(shared)).isEmpty();
    }

    @Test
    void aClosedNodeRefusesNewTransfers() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.typical(cut, 1);
        transfers.close();

        TransferFailedException e =
                failure(
                        transfers.upload(
                                UploadRequest.of("s", cut, names, tmp.toUri().toString())));

        assertThat(e.reason()).isEqualTo(Reason.CANCELLED);
        assertThat(e).hasMessage("durable transfers are shut down");
    }

    static RemoteFile copyOf(UploadResult result, String fileName) {
        return result.dataFiles().stream()
                .filter(f -> f.fileName().equals(fileName))
                .findFirst()
                .orElseThrow()
                .remote();
    }

    static TransferFailedException failure(Transfer<?> transfer) throws InterruptedException {
        try {
            transfer.result().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(TransferFailedException.class);
            return (TransferFailedException) e.getCause();
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("still running: " + transfer, e);
        }
        throw new AssertionError("succeeded: " + transfer);
    }

    private static void awaitStreams(int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (FaultyFileSystem.streamsCreated() < count) {
            assertThat(System.nanoTime()).as("streams created").isLessThan(deadline);
            Thread.sleep(5);
        }
    }
}
