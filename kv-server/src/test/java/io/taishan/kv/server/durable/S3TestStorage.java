package io.taishan.kv.server.durable;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FileSystem;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.BlobStoreContext;
import org.jclouds.blobstore.options.ListContainerOptions;

/**
 * A real S3 server in the test JVM (s3proxy over an in-memory store, one bucket) and the {@code
 * durable.*} options that reach it through Flink's own S3 file system, {@code flink-s3-fs-hadoop}
 * loaded as a plugin from the plugins directory Maven prepares, as a kv-server node reaches its
 * checkpoint storage.
 */
public final class S3TestStorage implements AutoCloseable {
    public static final String BUCKET = "checkpoints";
    static final String ACCESS_KEY = "taishan-access";
    static final String SECRET_KEY = "taishan-secret";

    /** S3A's block size: a 20 MiB file goes as 4 parts. */
    static final int MULTIPART_BYTES = 5 << 20;

    private final BlobStoreContext store;
    private final S3Proxy proxy;
    private final String endpoint;

    private S3TestStorage(BlobStoreContext store, S3Proxy proxy, String endpoint) {
        this.store = store;
        this.proxy = proxy;
        this.endpoint = endpoint;
    }

    public static S3TestStorage start() throws Exception {
        BlobStoreContext store =
                ContextBuilder.newBuilder("transient")
                        .credentials("identity", "credential")
                        .build(BlobStoreContext.class);
        S3Proxy proxy =
                S3Proxy.builder()
                        .blobStore(store.getBlobStore())
                        .endpoint(URI.create("http://127.0.0.1:0"))
                        .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
                        .build();
        proxy.start();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!"STARTED".equals(proxy.getState())) {
            assertThat(System.nanoTime()).as("s3proxy started").isLessThan(deadline);
            Thread.sleep(10);
        }
        store.getBlobStore().createContainerInLocation(null, BUCKET);
        return new S3TestStorage(store, proxy, "http://127.0.0.1:" + proxy.getPort());
    }

    /** The node's options, with this secret key (another is refused with a 403). */
    public DurableOptions options(String secret) {
        Map<String, String> flink = new HashMap<>();
        flink.put("s3.endpoint", endpoint);
        flink.put("s3.path.style.access", "true");
        flink.put("s3.access-key", ACCESS_KEY);
        flink.put("s3.secret-key", secret);
        flink.put("s3.multipart.size", Integer.toString(MULTIPART_BYTES));
        flink.put("s3.attempts.maximum", "1");
        flink.put("s3.retry.limit", "1");
        return new DurableOptions(
                true,
                null,
                flink,
                Path.of(System.getProperty("taishan.test.flink-plugins-dir")),
                4,
                2,
                Duration.ofMillis(10),
                Duration.ofSeconds(60));
    }

    public DurableOptions options() {
        return options(SECRET_KEY);
    }

    /** {@code s3://checkpoints/<path>} */
    public static String s3(String path) {
        return "s3://" + BUCKET + "/" + path;
    }

    /** The object key of a copy. */
    public static String key(String s3Path) {
        return s3Path.substring(("s3://" + BUCKET + "/").length());
    }

    public BlobStore blobs() {
        return store.getBlobStore();
    }

    /** The keys of the objects under {@code prefix}. */
    public List<String> keysUnder(String prefix) {
        List<String> names = new ArrayList<>();
        blobs().list(BUCKET, ListContainerOptions.Builder.prefix(prefix).recursive())
                .forEach(m -> names.add(m.getName()));
        return names;
    }

    /** Stops the server and leaves no Flink file system configured for it (they are JVM-wide). */
    @Override
    public void close() throws Exception {
        proxy.stop();
        store.close();
        FileSystem.initialize(new Configuration(), null);
    }
}
