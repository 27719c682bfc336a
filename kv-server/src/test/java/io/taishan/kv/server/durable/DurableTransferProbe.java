package io.taishan.kv.server.durable;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStoreContext;

/**
 * Not a test: what an upload and a download of a cut cost on this machine, on {@code file://} and
 * on s3proxy (in this JVM, in-memory store) through {@code flink-s3-fs-hadoop} as a plugin, and
 * what CRC32C costs alone. Prints MB/s per run.
 *
 * <pre>
 * java -cp kv-server/target/test-classes:kv-server/target/classes:$(test classpath) \
 *     io.taishan.kv.server.durable.DurableTransferProbe [files] [MiB per file] [plugins dir]
 * </pre>
 */
public final class DurableTransferProbe {
    private DurableTransferProbe() {}

    public static void main(String[] args) throws Exception {
        int files = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        int mib = args.length > 1 ? Integer.parseInt(args[1]) : 32;
        Path plugins = Path.of(args.length > 2 ? args[2] : "kv-server/target/test-plugins");
        Path tmp = Files.createTempDirectory("durable-probe");
        Map<String, Integer> sizes = new TreeMap<>();
        for (int i = 0; i < files; i++) {
            sizes.put(String.format("%06d.sst", 10 + i), mib << 20);
        }
        sizes.put("MANIFEST-000009", 4_000);
        sizes.put("CURRENT", 16);
        sizes.put("OPTIONS-000007", 7_000);
        Path cut = tmp.resolve("cut");
        List<String> names = Cuts.write(cut, 1, sizes);
        long bytes = (long) files * (mib << 20);
        System.out.printf("cut: %d files of %d MiB (%d MiB)%n", files, mib, bytes >> 20);

        crc32c(bytes);

        DurableOptions local =
                new DurableOptions(
                        true,
                        null,
                        Map.of(),
                        null,
                        4,
                        3,
                        Duration.ofSeconds(1),
                        Duration.ofHours(1));
        try (CutTransfers transfers = CutTransfers.start(local)) {
            for (int run = 1; run <= 3; run++) {
                round(
                        transfers,
                        cut,
                        names,
                        tmp.resolve("remote-" + run).toUri().toString(),
                        tmp.resolve("restored-" + run),
                        bytes,
                        "file:// run " + run);
            }
        }

        BlobStoreContext store =
                ContextBuilder.newBuilder("transient")
                        .credentials("identity", "credential")
                        .build(BlobStoreContext.class);
        S3Proxy proxy =
                S3Proxy.builder()
                        .blobStore(store.getBlobStore())
                        .endpoint(URI.create("http://127.0.0.1:0"))
                        .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, "a", "s")
                        .build();
        proxy.start();
        while (!"STARTED".equals(proxy.getState())) {
            Thread.sleep(10);
        }
        store.getBlobStore().createContainerInLocation(null, "probe");
        DurableOptions s3 =
                new DurableOptions(
                        true,
                        null,
                        Map.of(
                                "s3.endpoint", "http://127.0.0.1:" + proxy.getPort(),
                                "s3.path.style.access", "true",
                                "s3.access-key", "a",
                                "s3.secret-key", "s"),
                        plugins,
                        4,
                        3,
                        Duration.ofSeconds(1),
                        Duration.ofHours(1));
        try (CutTransfers transfers = CutTransfers.start(s3)) {
            for (int run = 1; run <= 3; run++) {
                round(
                        transfers,
                        cut,
                        names,
                        "s3://probe/run-" + run + "/shared",
                        tmp.resolve("s3-restored-" + run),
                        bytes,
                        "s3proxy run " + run);
                store.getBlobStore().clearContainer("probe");
            }
        } finally {
            proxy.stop();
            store.close();
        }
        System.exit(0);
    }

    private static void round(
            CutTransfers transfers,
            Path cut,
            List<String> names,
            String target,
            Path restored,
            long bytes,
            String what)
            throws Exception {
        long start = System.nanoTime();
        UploadResult up = transfers.upload(UploadRequest.of("probe", cut, names, target)).await();
        long uploaded = System.nanoTime() - start;
        start = System.nanoTime();
        transfers.download(up.downloadInto(restored)).await();
        long downloaded = System.nanoTime() - start;
        System.out.printf(
                "%s: upload %.0f MB/s (%d ms), download %.0f MB/s (%d ms)%n",
                what,
                bytes / 1e6 / (uploaded / 1e9),
                uploaded / 1_000_000,
                bytes / 1e6 / (downloaded / 1e9),
                downloaded / 1_000_000);
        deleteTree(restored);
    }

    private static void crc32c(long bytes) {
        byte[] buffer = new byte[128 << 10];
        new java.util.Random(1).nextBytes(buffer);
        for (int run = 1; run <= 3; run++) {
            CRC32C crc = new CRC32C();
            long start = System.nanoTime();
            for (long done = 0; done < bytes; done += buffer.length) {
                crc.update(buffer, 0, buffer.length);
            }
            long nanos = System.nanoTime() - start;
            System.out.printf(
                    "CRC32C run %d: %.0f MB/s (%d)%n",
                    run, bytes / 1e6 / (nanos / 1e9), crc.getValue() & 1);
        }
    }

    private static void deleteTree(Path dir) throws Exception {
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
