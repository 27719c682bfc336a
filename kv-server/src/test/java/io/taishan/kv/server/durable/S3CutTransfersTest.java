package io.taishan.kv.server.durable;

import static io.taishan.kv.server.durable.CutUploadTest.copyOf;
import static io.taishan.kv.server.durable.CutUploadTest.failure;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.durable.TransferFailedException.Reason;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.domain.Blob;
import org.jclouds.blobstore.domain.BlobMetadata;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cuts to and from a real S3 server in the test JVM (s3proxy over an in-memory store) through
 * Flink's own S3 file system, {@code flink-s3-fs-hadoop} loaded as a plugin from a plugins
 * directory ({@code durable.plugins-dir}) with Flink's {@code s3.*} keys ({@code durable.flink.*}),
 * as a kv-server node reaches its checkpoint storage: a 20 MiB file goes up in multipart (5 MiB
 * parts), everything comes back verified, copies are reused, a missing or altered object is
 * refused, and wrong credentials fail naming the path.
 */
class S3CutTransfersTest {
    private static S3TestStorage s3;

    @TempDir Path tmp;
    private CutTransfers transfers;

    @BeforeAll
    static void startS3() throws Exception {
        s3 = S3TestStorage.start();
    }

    @AfterAll
    static void stopS3() throws Exception {
        if (s3 != null) {
            s3.close();
        }
    }

    @BeforeEach
    void start() {
        transfers = CutTransfers.start(s3.options());
    }

    @AfterEach
    void stop() {
        transfers.close();
    }

    @Test
    void aCutGoesUpInPartsAndComesBackVerified() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names = bigCut(cut);

        UploadResult up =
                transfers
                        .upload(
                                new UploadRequest(
                                        "store-1",
                                        cut,
                                        names,
                                        s3("job-1/shared"),
                                        s3("job-1/chk-1"),
                                        Map.of()))
                        .await();

        RemoteFile big = copyOf(up, "000020.sst");
        assertThat(big.path())
                .matches("s3://" + S3TestStorage.BUCKET + "/job-1/shared/[0-9a-f-]{36}");
        assertThat(big.sizeBytes()).isEqualTo(20L << 20);
        BlobMetadata meta = s3.blobs().blobMetadata(S3TestStorage.BUCKET, key(big));
        assertThat(meta.getSize()).isEqualTo(big.sizeBytes());
        assertThat(meta.getETag())
                .as("a multipart upload's ETag ends in -<parts>")
                .endsWith("-4\"");
        assertThat(s3.blobs().blobExists(S3TestStorage.BUCKET, key(up.metadataPack()))).isTrue();
        assertThat(up.metadataPack().path()).startsWith(s3("job-1/chk-1/"));

        Path restored = tmp.resolve("restored");
        DownloadResult down = transfers.download(up.downloadInto(restored)).await();

        CutDownloadTest.assertSameFiles(restored, cut);
        assertThat(down.downloadedBytes()).isEqualTo(up.uploadedBytes());
    }

    @Test
    void aSecondCheckpointUploadsOnlyWhatIsNew() throws Exception {
        Path cut1 = tmp.resolve("cut1");
        List<String> names1 =
                Cuts.write(cut1, 7, sizes("000010.sst", 2 << 20, "MANIFEST-000002", 500));
        UploadResult first =
                transfers
                        .upload(UploadRequest.of("store-2", cut1, names1, s3("job-2/shared")))
                        .await();
        Path cut2 = tmp.resolve("cut2");
        Files.createDirectories(cut2);
        Files.createLink(cut2.resolve("000010.sst"), cut1.resolve("000010.sst"));
        List<String> names2 = new ArrayList<>(List.of("000010.sst"));
        names2.addAll(Cuts.write(cut2, 8, sizes("000011.sst", 1 << 20, "MANIFEST-000003", 600)));
        Set<String> confirmed = Set.of(copyOf(first, "000010.sst").path());

        UploadResult second =
                transfers
                        .upload(
                                UploadRequest.of("store-2", cut2, names2, s3("job-2/shared"))
                                        .withReusable(
                                                first.origins().reusable(confirmed::contains)))
                        .await();

        assertThat(second.reused()).extracting(CutFile::fileName).containsExactly("000010.sst");
        assertThat(second.uploaded()).extracting(CutFile::fileName).containsExactly("000011.sst");
        Path restored = tmp.resolve("restored");
        transfers.download(second.downloadInto(restored)).await();
        CutDownloadTest.assertSameFiles(restored, cut2);
    }

    @Test
    void aMissingOrAlteredObjectIsRefused() throws Exception {
        Path cut = tmp.resolve("cut");
        List<String> names =
                Cuts.write(
                        cut, 9, sizes("000030.sst", 300_000, "000031.sst", 200_000, "CURRENT", 16));
        UploadResult up =
                transfers.upload(UploadRequest.of("s", cut, names, s3("job-3/shared"))).await();

        RemoteFile altered = copyOf(up, "000030.sst");
        byte[] other = new byte[(int) altered.sizeBytes()];
        BlobStore blobs = s3.blobs();
        Blob replacement = blobs.blobBuilder(key(altered)).payload(other).build();
        blobs.putBlob(S3TestStorage.BUCKET, replacement);
        Transfer<DownloadResult> first = transfers.download(up.downloadInto(tmp.resolve("a")));
        TransferFailedException corrupt = failure(first);
        first.settled().get(30, TimeUnit.SECONDS);
        assertThat(corrupt.reason()).isEqualTo(Reason.CORRUPT);
        assertThat(corrupt).hasMessageStartingWith(altered.path() + " is corrupt: CRC32C ");

        RemoteFile gone = copyOf(up, "000031.sst");
        blobs.removeBlob(S3TestStorage.BUCKET, key(gone));
        List<CutFile> onlyTheMissingOne = List.of(new CutFile("000031.sst", gone));
        Transfer<DownloadResult> second =
                transfers.download(new DownloadRequest(onlyTheMissingOne, null, tmp.resolve("b")));
        TransferFailedException missing = failure(second);
        second.settled().get(30, TimeUnit.SECONDS);
        assertThat(missing.reason()).isEqualTo(Reason.MISSING);
        assertThat(missing).hasMessageContaining(gone.path() + " (000031.sst) is missing");
        assertThat(Cuts.names(tmp)).containsExactly("cut");
    }

    @Test
    void wrongCredentialsFailNamingThePath() throws Exception {
        transfers.close();
        transfers = CutTransfers.start(s3.options("not-the-secret"));
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.write(cut, 10, sizes("000040.sst", 1_000));

        TransferFailedException e =
                failure(transfers.upload(UploadRequest.of("s", cut, names, s3("job-4/shared"))));

        assertThat(e.reason()).isEqualTo(Reason.STORAGE);
        assertThat(e.path()).startsWith(s3("job-4/shared/"));
        assertThat(e).hasMessageContaining("cannot create " + s3("job-4/shared/"));
        assertThat(e).hasMessageContaining("403");
        assertThat(blobsUnder("job-4/")).isEmpty();
    }

    private static List<String> bigCut(Path cut) throws Exception {
        return Cuts.write(
                cut,
                11,
                sizes(
                        "000020.sst", 20 << 20,
                        "000021.sst", 1 << 20,
                        "MANIFEST-000019", 2_000,
                        "CURRENT", 16,
                        "OPTIONS-000018", 7_000));
    }

    private static Map<String, Integer> sizes(Object... nameThenSize) {
        Map<String, Integer> sizes = new TreeMap<>();
        for (int i = 0; i < nameThenSize.length; i += 2) {
            sizes.put((String) nameThenSize[i], (Integer) nameThenSize[i + 1]);
        }
        return sizes;
    }

    private static String s3(String path) {
        return S3TestStorage.s3(path);
    }

    private static String key(RemoteFile file) {
        return S3TestStorage.key(file.path());
    }

    private static List<String> blobsUnder(String prefix) {
        return s3.keysUnder(prefix);
    }
}
