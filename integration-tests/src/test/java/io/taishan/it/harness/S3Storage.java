package io.taishan.it.harness;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.plugin.DefaultPluginManager;
import org.apache.flink.core.plugin.DirectoryBasedPluginFinder;
import org.apache.flink.core.plugin.PluginDescriptor;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.BlobStoreContext;
import org.jclouds.blobstore.domain.StorageMetadata;
import org.jclouds.blobstore.options.ListContainerOptions;

/**
 * A real S3 server in the test JVM (s3proxy over jclouds' in-memory store, one bucket), reached
 * through Flink's own S3 file system ({@code flink-s3-fs-hadoop}, a plugin in the plugins directory
 * Maven prepares, {@code -Dtaishan.test.flink-plugins-dir}) from both sides: this JVM, where the
 * MiniCluster's JobManager and TaskManager write and read the checkpoints, and the kv-server child
 * JVM, which gets the same Flink keys as {@code durable.flink.<key>} lines.
 */
public final class S3Storage implements AutoCloseable {
    public static final String BUCKET = "checkpoints";
    private static final String ACCESS_KEY = "taishan-access";
    private static final String SECRET_KEY = "taishan-secret";
    private static final String PLUGINS_DIR_PROPERTY = "taishan.test.flink-plugins-dir";

    private final BlobStoreContext store;
    private final S3Proxy proxy;
    private final Map<String, String> flinkKeys;

    private S3Storage(BlobStoreContext store, S3Proxy proxy, Map<String, String> flinkKeys) {
        this.store = store;
        this.proxy = proxy;
        this.flinkKeys = flinkKeys;
    }

    /**
     * Starts the server and sets up this JVM's Flink file systems for it (they are JVM-wide: {@link
     * #close()} sets them back).
     */
    public static S3Storage start() throws Exception {
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
            if (System.nanoTime() > deadline) {
                proxy.stop();
                store.close();
                throw new IllegalStateException("s3proxy did not start: " + proxy.getState());
            }
            Thread.sleep(10);
        }
        store.getBlobStore().createContainerInLocation(null, BUCKET);
        Map<String, String> keys = new TreeMap<>();
        keys.put("s3.endpoint", "http://127.0.0.1:" + proxy.getPort());
        keys.put("s3.path.style.access", "true");
        keys.put("s3.access-key", ACCESS_KEY);
        keys.put("s3.secret-key", SECRET_KEY);
        S3Storage s3 = new S3Storage(store, proxy, keys);
        s3.initializeFlinkFileSystems();
        return s3;
    }

    /** Flink's plugins directory with {@code s3-fs-hadoop/flink-s3-fs-hadoop-<version>.jar}. */
    public static Path pluginsDir() {
        String dir = System.getProperty(PLUGINS_DIR_PROPERTY);
        if (dir == null || !Files.isDirectory(Path.of(dir))) {
            throw new IllegalStateException(
                    "-D"
                            + PLUGINS_DIR_PROPERTY
                            + " must name Flink's plugins directory (integration-tests/pom.xml"
                            + " prepares it), not "
                            + dir);
        }
        return Path.of(dir);
    }

    private void initializeFlinkFileSystems() throws IOException {
        Configuration config = Configuration.fromMap(flinkKeys);
        List<PluginDescriptor> plugins = new ArrayList<>();
        new DirectoryBasedPluginFinder(pluginsDir()).findPlugins().forEach(plugins::add);
        FileSystem.initialize(
                config,
                new DefaultPluginManager(
                        plugins, CoreOptions.getPluginParentFirstLoaderPatterns(config)));
    }

    /** The kv-server's config lines that reach this server with the same keys. */
    public String kvServerProperties() {
        StringBuilder lines = new StringBuilder();
        lines.append("durable.plugins-dir = ").append(pluginsDir()).append('\n');
        flinkKeys.forEach(
                (key, value) ->
                        lines.append("durable.flink.")
                                .append(key)
                                .append(" = ")
                                .append(value)
                                .append('\n'));
        return lines.toString();
    }

    /** {@code s3://checkpoints/<path>} */
    public static String uri(String path) {
        return "s3://" + BUCKET + "/" + path;
    }

    /** Object key → size, of the objects under {@code prefix}. */
    public Map<String, Long> objectsUnder(String prefix) {
        Map<String, Long> objects = new TreeMap<>();
        BlobStore blobs = store.getBlobStore();
        String marker = null;
        do {
            ListContainerOptions options = ListContainerOptions.Builder.prefix(prefix).recursive();
            if (marker != null) {
                options.afterMarker(marker);
            }
            var page = blobs.list(BUCKET, options);
            for (StorageMetadata m : page) {
                if (m.getSize() != null) {
                    objects.put(m.getName(), m.getSize());
                }
            }
            marker = page.getNextMarker();
        } while (marker != null);
        return objects;
    }

    /** Stops the server and leaves this JVM's Flink file systems as they were before. */
    @Override
    public void close() throws Exception {
        try {
            proxy.stop();
            store.close();
        } finally {
            FileSystem.initialize(new Configuration(), null);
        }
    }
}
