package io.taishan.kv.server.durable;

import static io.taishan.kv.server.durable.CutUploadTest.copyOf;
import static io.taishan.kv.server.durable.CutUploadTest.failure;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.durable.TransferFailedException.Reason;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.Checkpoint;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

/**
 * Downloads from {@code file://} of what an upload wrote: a cut comes back byte for byte (a real
 * RocksDB checkpoint opens and reads back); a file missing, shorter, longer or with other bytes
 * than recorded is refused naming it, and a refused download leaves neither its target nor its
 * staging directory.
 */
class CutDownloadTest {
    @TempDir Path tmp;
    private CutTransfers transfers;
    private Path cut;
    private UploadResult uploaded;

    @BeforeEach
    void uploadACut() throws Exception {
        transfers = CutTransfers.start(Cuts.options(Duration.ofSeconds(60)));
        cut = tmp.resolve("cut");
        List<String> names = Cuts.typical(cut, 1);
        uploaded =
                transfers
                        .upload(
                                UploadRequest.of(
                                        "s", cut, names, tmp.resolve("remote").toUri().toString()))
                        .await();
        Files.createDirectories(tmp.resolve("restores"));
    }

    @AfterEach
    void stop() {
        transfers.close();
    }

    @Test
    void aCutComesBackAsItWasUploaded() throws Exception {
        Path target = tmp.resolve("restores/cut");

        DownloadResult result = transfers.download(uploaded.downloadInto(target)).await();

        assertThat(result.dir()).isEqualTo(target);
        assertThat(result.fileNames())
                .containsExactly(
                        "000010.sst",
                        "000011.sst",
                        "000012.sst",
                        "CURRENT",
                        "MANIFEST-000009",
                        "OPTIONS-000007",
                        "TAISHAN-CUT");
        assertSameFiles(target, cut);
        assertThat(Cuts.names(tmp.resolve("restores"))).containsExactly("cut");
        assertThat(result.downloadedBytes()).isEqualTo(uploaded.uploadedBytes());
        assertThat(transfers.stats().downloadedFiles()).isEqualTo(4);
        assertThat(transfers.stats().downloadedBytes()).isEqualTo(uploaded.uploadedBytes());
    }

    /**
     * Files with a local copy are linked, not read from storage; a local copy that is gone or has
     * another size is downloaded after all, and the cut still comes back as it was uploaded.
     */
    @Test
    void filesWithALocalCopyAreLinkedAndDownloadedWhenTheLinkFails() throws Exception {
        List<CutFile> files = uploaded.dataFiles();
        assertThat(files).hasSizeGreaterThanOrEqualTo(3);
        Path shorter = tmp.resolve("shorter");
        Files.write(shorter, new byte[] {1, 2, 3});
        CutFile linked = files.get(0);
        CutFile gone = files.get(1);
        CutFile wrongSize = files.get(2);
        Map<String, Path> local =
                Map.of(
                        linked.fileName(), cut.resolve(linked.fileName()),
                        gone.fileName(), tmp.resolve("no-such-file"),
                        wrongSize.fileName(), shorter);
        Path target = tmp.resolve("restores/cut");

        DownloadResult result =
                transfers
                        .download(
                                new DownloadRequest(files, uploaded.metadataPack(), target, local))
                        .await();

        assertSameFiles(target, cut);
        assertThat(
                        Files.isSameFile(
                                target.resolve(linked.fileName()), cut.resolve(linked.fileName())))
                .as("linked")
                .isTrue();
        assertThat(
                        Files.isSameFile(
                                target.resolve(wrongSize.fileName()),
                                cut.resolve(wrongSize.fileName())))
                .isFalse();
        long linkedBytes = linked.remote().sizeBytes();
        assertThat(result.downloadedBytes()).isEqualTo(uploaded.uploadedBytes() - linkedBytes);
        assertThat(transfers.stats().downloadedBytes())
                .isEqualTo(uploaded.uploadedBytes() - linkedBytes);
    }

    @Test
    void aRocksDbCheckpointOpensFromItsDownloadedCopy() throws Exception {
        RocksDB.loadLibrary();
        Path db = tmp.resolve("db");
        Path checkpoint = tmp.resolve("checkpoint");
        try (Options options = new Options().setCreateIfMissing(true);
                FlushOptions flush = new FlushOptions().setWaitForFlush(true);
                RocksDB rocks = RocksDB.open(options, db.toString())) {
            // Four SSTs: four flushes.
            for (int i = 0; i < 20_000; i++) {
                rocks.put(key(i), ("value-" + i).getBytes(StandardCharsets.UTF_8));
                if (i % 5_000 == 4_999) {
                    rocks.flush(flush);
                }
            }
            try (Checkpoint c = Checkpoint.create(rocks)) {
                c.createCheckpoint(checkpoint.toString());
            }
        }
        List<String> names;
        try (Stream<Path> files = Files.list(checkpoint)) {
            names = files.map(p -> p.getFileName().toString()).sorted().toList();
        }
        assertThat(names).anyMatch(n -> n.endsWith(".sst")).anyMatch(n -> n.startsWith("MANIFEST"));
        UploadResult up =
                transfers
                        .upload(
                                UploadRequest.of(
                                        "db",
                                        checkpoint,
                                        names,
                                        tmp.resolve("r2").toUri().toString()))
                        .await();
        assertThat(up.uploaded())
                .hasSize((int) names.stream().filter(n -> n.endsWith(".sst")).count());

        Path restored = tmp.resolve("restores/db");
        transfers.download(up.downloadInto(restored)).await();

        assertSameFiles(restored, checkpoint);
        try (Options options = new Options();
                RocksDB rocks = RocksDB.open(options, restored.toString())) {
            rocks.verifyChecksum();
            for (int i = 0; i < 20_000; i += 997) {
                assertThat(new String(rocks.get(key(i)), StandardCharsets.UTF_8))
                        .isEqualTo("value-" + i);
            }
        }
    }

    @Test
    void aMissingFileIsRefusedNamingIt() throws Exception {
        RemoteFile gone = copyOf(uploaded, "000011.sst");
        Files.delete(Remote.file(gone));

        TransferFailedException e = refused();

        assertThat(e.reason()).isEqualTo(Reason.MISSING);
        assertThat(e.path()).isEqualTo(gone.path());
        assertThat(e).hasMessageContaining(gone.path() + " (000011.sst) is missing");
    }

    @Test
    void aShortFileIsRefusedNamingIt() throws Exception {
        RemoteFile file = copyOf(uploaded, "000010.sst");
        try (RandomAccessFile raf = new RandomAccessFile(Remote.file(file).toFile(), "rw")) {
            raf.setLength(file.sizeBytes() - 1);
        }

        TransferFailedException e = refused();

        assertThat(e.reason()).isEqualTo(Reason.CORRUPT);
        assertThat(e)
                .hasMessage(
                        file.path()
                                + " is corrupt: "
                                + (file.sizeBytes() - 1)
                                + " bytes where "
                                + file.sizeBytes()
                                + " were recorded");
    }

    @Test
    void aLongerFileIsRefusedNamingIt() throws Exception {
        RemoteFile file = copyOf(uploaded, "000012.sst");
        Files.write(Remote.file(file), new byte[] {42}, StandardOpenOption.APPEND);

        TransferFailedException e = refused();

        assertThat(e.reason()).isEqualTo(Reason.CORRUPT);
        assertThat(e).hasMessage(file.path() + " is corrupt: longer than the 0 bytes recorded");
    }

    @Test
    void aFileWithOtherBytesIsRefusedNamingIt() throws Exception {
        RemoteFile file = copyOf(uploaded, "000011.sst");
        flipAByte(Remote.file(file), 12_345);

        TransferFailedException e = refused();

        assertThat(e.reason()).isEqualTo(Reason.CORRUPT);
        assertThat(e.path()).isEqualTo(file.path());
        assertThat(e)
                .hasMessageStartingWith(file.path() + " is corrupt: CRC32C ")
                .hasMessageEndingWith(
                        " where " + RemoteFile.crc32cHex(file.crc32c()) + " was recorded");
    }

    @Test
    void aCorruptMetadataPackIsRefused() throws Exception {
        RemoteFile pack = uploaded.metadataPack();
        flipAByte(Remote.file(pack), 30);

        TransferFailedException e = refused();

        assertThat(e.reason()).isEqualTo(Reason.CORRUPT);
        assertThat(e.path()).isEqualTo(pack.path());
        assertThat(e).hasMessageStartingWith(pack.path() + " is corrupt: ");
    }

    @Test
    void aTargetThatExistsIsRefused() throws Exception {
        Path target = Files.createDirectories(tmp.resolve("restores/cut"));

        TransferFailedException e = failure(transfers.download(uploaded.downloadInto(target)));

        assertThat(e.reason()).isEqualTo(Reason.LOCAL);
        assertThat(e)
                .hasMessage("cannot download into " + target + ": java.io.IOException: it exists");
    }

    @Test
    void aDownloadLargerThanTheDiskIsRefusedBeforeItStarts() throws Exception {
        RemoteFile huge = new RemoteFile(tmp.resolve("huge").toUri().toString(), 1L << 60, 0);
        Path target = tmp.resolve("restores/cut");

        TransferFailedException e =
                failure(
                        transfers.download(
                                new DownloadRequest(
                                        List.of(new CutFile("000001.sst", huge)), null, target)));

        assertThat(e.reason()).isEqualTo(Reason.LOCAL);
        assertThat(e)
                .hasMessageStartingWith(
                        "cannot download into "
                                + target
                                + ": java.io.IOException: no space: "
                                + (1L << 60)
                                + " bytes needed, ");
        assertThat(Cuts.names(tmp.resolve("restores"))).isEmpty();
    }

    @Test
    void aLeftoverOfADownloadIsRecognized() {
        assertThat(
                        CutTransfers.isDownloadLeftover(
                                tmp.resolve("42.download-0f8c3a77-1b2c-4d5e-8f90-123456789abc")))
                .isTrue();
        assertThat(CutTransfers.isDownloadLeftover(tmp.resolve("42"))).isFalse();
        assertThat(CutTransfers.isDownloadLeftover(tmp.resolve("42.download-x"))).isFalse();
    }

    /** The download fails, and leaves neither its target nor its staging directory. */
    private TransferFailedException refused() throws Exception {
        Path target = tmp.resolve("restores/cut");
        Transfer<DownloadResult> download = transfers.download(uploaded.downloadInto(target));
        TransferFailedException e = failure(download);
        download.settled().get(30, TimeUnit.SECONDS);
        assertThat(Cuts.names(tmp.resolve("restores"))).isEmpty();
        assertThat(transfers.stats().failedDownloads()).isEqualTo(1);
        return e;
    }

    private static void flipAByte(Path file, long at) throws Exception {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(at);
            int b = raf.read();
            raf.seek(at);
            raf.write(b ^ 0x01);
        }
    }

    private static byte[] key(int i) {
        return String.format("key-%08d", i).getBytes(StandardCharsets.UTF_8);
    }

    static void assertSameFiles(Path actual, Path expected) throws Exception {
        Map<String, byte[]> want = Cuts.contents(expected);
        Map<String, byte[]> got = Cuts.contents(actual);
        assertThat(got.keySet()).containsExactlyElementsOf(want.keySet());
        List<String> differ = new ArrayList<>();
        want.forEach(
                (name, bytes) -> {
                    if (!Arrays.equals(bytes, got.get(name))) {
                        differ.add(name);
                    }
                });
        assertThat(differ).as("files whose bytes differ").isEmpty();
    }
}
