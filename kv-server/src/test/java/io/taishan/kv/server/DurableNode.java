package io.taishan.kv.server;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.durable.DurableOptions;
import io.taishan.kv.server.storage.DurableFiles;
import io.taishan.kv.server.storage.SnapshotCacheOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import javax.annotation.Nullable;

/**
 * One in-process kv-server on a port chosen up front and a data dir of its own, which a test stops,
 * wipes (a lost disk) and starts again empty on the same address; and a model of what its shards
 * hold, written through the client, to check a restore key by key.
 */
final class DurableNode implements AutoCloseable {
    private final Path dataDir;
    private final int port;
    @Nullable private final DurableOptions durable;
    private final SnapshotCacheOptions snapshotCache;
    private EmbeddedKvServer server;

    /** {@code durable} null: the node has no checkpoint storage. */
    DurableNode(Path dataDir, @Nullable DurableOptions durable) {
        this(dataDir, durable, SnapshotCacheOptions.DEFAULTS);
    }

    DurableNode(
            Path dataDir, @Nullable DurableOptions durable, SnapshotCacheOptions snapshotCache) {
        this.dataDir = dataDir;
        this.port = freePort();
        this.durable = durable;
        this.snapshotCache = snapshotCache;
        start();
    }

    /** {@code file://} checkpoint storage, quick retries. */
    static DurableOptions fileStorage() {
        return new DurableOptions(
                true, null, Map.of(), null, 2, 2, Duration.ofMillis(10), Duration.ofSeconds(60));
    }

    void start() {
        KvServerConfig.Builder b =
                KvServerConfig.builder()
                        .port(port)
                        .dataDir(dataDir)
                        .blockCacheBytes(8 << 20)
                        .writeBufferBytes(8 << 20)
                        .snapshotCache(snapshotCache);
        b.durable(durable != null ? durable : DurableOptions.disabled());
        server = EmbeddedKvServer.start(b.build());
    }

    void stop() {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    /** The disk is lost: the node stops, its data dir goes, and it starts again empty. */
    void loseDiskAndRestart() throws IOException {
        stop();
        DurableFiles.deleteTree(dataDir);
        start();
    }

    EmbeddedKvServer server() {
        return server;
    }

    Path dataDir() {
        return dataDir;
    }

    String address() {
        return "127.0.0.1:" + port;
    }

    KvStore connect() {
        return connect(KvClientConfig.DEFAULT_DURABLE_CALL_TIMEOUT);
    }

    /** A client that gives up a call to checkpoint storage after {@code durableTimeout}. */
    KvStore connect(Duration durableTimeout) {
        return KvStores.connect(
                KvClientConfig.forAddresses(address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .durableCallTimeout(durableTimeout)
                        .build());
    }

    io.taishan.kv.server.durable.TransferStats transferStats() {
        return server.server().durableTransfers().orElseThrow().stats();
    }

    long downloadedBytes() {
        return server.server().durableTransfers().orElseThrow().stats().downloadedBytes();
    }

    @Override
    public void close() {
        stop();
    }

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What each shard should hold, written through the client. */
    static final class Model {
        private final Map<Integer, TreeMap<String, String>> shards = new HashMap<>();
        private final Random random;

        Model(long seed) {
            this.random = new Random(seed);
        }

        /**
         * Puts {@code keys} random keys per shard (some overwriting earlier ones) and deletes a
         * few; values of {@code valueBytes}, random so they do not compress.
         */
        void write(KvStore kv, List<ShardLease> leases, int keys, int valueBytes) {
            WriteBatch batch = new WriteBatch(leases.get(0).table());
            for (ShardLease lease : leases) {
                TreeMap<String, String> shard =
                        shards.computeIfAbsent(lease.shard(), s -> new TreeMap<>());
                for (int i = 0; i < keys; i++) {
                    String key = "k" + random.nextInt(keys * 2);
                    String value = randomText(valueBytes);
                    batch.put(lease, bytes(key), bytes(value));
                    shard.put(key, value);
                }
                if (!shard.isEmpty() && random.nextBoolean()) {
                    String gone = shard.firstKey();
                    batch.delete(lease, bytes(gone));
                    shard.remove(gone);
                }
            }
            kv.write(batch);
        }

        /** A copy of what it holds now. */
        Map<Integer, TreeMap<String, String>> copy() {
            Map<Integer, TreeMap<String, String>> copy = new HashMap<>();
            shards.forEach((s, m) -> copy.put(s, new TreeMap<>(m)));
            return copy;
        }

        private String randomText(int length) {
            char[] chars = new char[length];
            for (int i = 0; i < length; i++) {
                chars[i] = (char) ('a' + random.nextInt(26));
            }
            return new String(chars);
        }
    }

    /** Reads every key of every shard with a scan and compares with {@code expected}. */
    static Map<Integer, TreeMap<String, String>> read(KvStore kv, List<ShardLease> leases) {
        Map<Integer, TreeMap<String, String>> actual = new HashMap<>();
        for (ShardLease lease : leases) {
            TreeMap<String, String> shard = new TreeMap<>();
            try (var it = kv.scan(lease, io.taishan.kv.protocol.ScanRange.all(), 0, false)) {
                while (it.hasNext()) {
                    var e = it.next();
                    shard.put(text(e.key()), text(e.value()));
                }
            }
            actual.put(lease.shard(), shard);
        }
        return actual;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
