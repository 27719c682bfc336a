package io.taishan.kv.server;

import io.taishan.kv.server.storage.DurableFiles;
import io.taishan.kv.server.storage.StorageEngine;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A kv-server in this JVM, for tests and demos: by default on an ephemeral port of 127.0.0.1 with a
 * temporary data directory that {@link #close()} deletes. Never use it in a JVM that has Flink's
 * RocksDB ({@code frocksdbjni}) on its classpath; use the child-JVM fixture there.
 */
public final class EmbeddedKvServer implements AutoCloseable {
    private final KvServer server;
    private final Path dataDir;
    private final boolean deleteOnClose;

    private EmbeddedKvServer(KvServer server, Path dataDir, boolean deleteOnClose) {
        this.server = server;
        this.dataDir = dataDir;
        this.deleteOnClose = deleteOnClose;
    }

    /** A single node on 127.0.0.1, ephemeral port, temporary data directory. */
    public static EmbeddedKvServer start() {
        return start(KvServerConfig.builder().build());
    }

    /**
     * A node with this config; without a data dir in it, a temporary one (deleted on close) is
     * used.
     */
    public static EmbeddedKvServer start(KvServerConfig config) {
        boolean temporary = config.dataDir() == null;
        Path dir;
        try {
            dir = temporary ? Files.createTempDirectory("taishan-kv-") : config.dataDir();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary data dir", e);
        }
        try {
            KvServer server = KvServer.start(config.toBuilder().dataDir(dir).build());
            return new EmbeddedKvServer(server, dir, temporary);
        } catch (RuntimeException e) {
            if (temporary) {
                deleteQuietly(dir);
            }
            throw e;
        }
    }

    /** {@code 127.0.0.1:port} (or the configured host). */
    public String address() {
        return server.address();
    }

    public int port() {
        return server.port();
    }

    /** The metrics endpoint's port; -1 unless the config has {@code metricsPort}. */
    public int metricsPort() {
        return server.metricsPort();
    }

    public Path dataDir() {
        return dataDir;
    }

    public KvServer server() {
        return server;
    }

    /** See {@link KvServer#largeValueBytesHeld}. */
    public long largeValueBytesHeld() {
        return server.largeValueBytesHeld();
    }

    /** See {@link KvServer#largeValueBytesPeak}. */
    public long largeValueBytesPeak() {
        return server.largeValueBytesPeak();
    }

    public StorageEngine storage() {
        return server.storage();
    }

    /** Graceful: flushes and closes every shard; then deletes a temporary data dir. */
    @Override
    public void close() {
        server.close();
        if (deleteOnClose) {
            deleteQuietly(dataDir);
        }
    }

    private static void deleteQuietly(Path root) {
        try {
            DurableFiles.deleteTree(root);
        } catch (IOException ignored) {
            // a temp dir left behind is not worth failing a close
        }
    }
}
