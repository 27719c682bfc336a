package io.taishan.benchmarks.kv;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A kv-server child JVM and a client on it, for one JMH trial: JMH forks the benchmark JVM, and the
 * server gets a JVM of its own beside it, as in {@link KvServiceBenchmark}.
 */
final class JmhKvServer implements AutoCloseable {
    private final Path dir;
    private final ChildKvServer server;
    private final KvStore store;

    private JmhKvServer(Path dir, ChildKvServer server, KvStore store) {
        this.dir = dir;
        this.server = server;
        this.store = store;
    }

    static JmhKvServer start() throws IOException {
        Path dir = Files.createTempDirectory("taishan-kv-jmh");
        Path data = Files.createDirectories(dir.resolve("data"));
        ChildKvServer server = ChildKvServer.start(data, dir.resolve("kv-server.log"));
        KvStore store =
                KvStores.connect(
                        KvClientConfig.forAddresses(server.address())
                                .requestTimeout(Duration.ofMinutes(1))
                                .build());
        return new JmhKvServer(dir, server, store);
    }

    KvStore store() {
        return store;
    }

    /** A fresh one-shard table and the lease on its shard. */
    ShardLease newShard(String table) {
        store.createTable(table, 1);
        return store.openShard(table, 0);
    }

    @Override
    public void close() throws IOException {
        store.close();
        server.close();
        KvServiceBenchmark.deleteRecursively(dir);
    }
}
