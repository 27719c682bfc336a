package io.taishan.kv.server.storage;

import com.google.protobuf.ByteString;
import io.taishan.kv.proto.Put;
import io.taishan.kv.proto.WriteOp;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Not a test: measures what open shards cost (file descriptors, resident memory, threads) for the
 * kv-server README. Run it with the module's test classpath:
 *
 * <pre>
 * java -cp target/test-classes:target/classes:$(cat target/test.cp) \
 *     io.taishan.kv.server.storage.ShardCapacityProbe /tmp/probe 4000 10
 * </pre>
 *
 * Phase 1 creates the shards, each with {@code keys} keys of 100 bytes, and closes them (one SST
 * each, as after a flush). Phase 2 reopens them one by one (a read) and prints the process's fds,
 * RSS and threads at steps. Phase 3 writes one key to each open shard (every memtable active).
 */
public final class ShardCapacityProbe {
    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args[0]);
        int shards = Integer.parseInt(args[1]);
        int keys = Integer.parseInt(args[2]);
        StorageOptions defaults = StorageOptions.defaults(dir);
        StorageOptions options =
                new StorageOptions(
                        dir,
                        WalMode.OFF,
                        defaults.blockCacheBytes(),
                        defaults.writeBufferBytes(),
                        defaults.shardWriteBufferBytes(),
                        defaults.backgroundThreads(),
                        defaults.maxOpenFilesPerShard(),
                        Duration.ofHours(1),
                        Integer.MAX_VALUE);
        print("start (JVM, no engine)", 0);
        try (StorageEngine engine = StorageEngine.open(options)) {
            print("engine open, no shard", 0);
            engine.createTable("probe", shards, true);
            TableStore t = engine.tableStore("probe");
            long[] epochs = new long[shards];
            byte[] value = new byte[100];
            long began = System.nanoTime();
            for (int s = 0; s < shards; s++) {
                ShardStore shard = t.shard(s);
                epochs[s] = shard.open();
                if (shard.get(epochs[s], key(0)) == null) {
                    List<WriteOp> ops = new ArrayList<>();
                    for (int k = 0; k < keys; k++) {
                        ops.add(
                                WriteOp.newBuilder()
                                        .setPut(
                                                Put.newBuilder()
                                                        .setKey(ByteString.copyFrom(key(k)))
                                                        .setValue(ByteString.copyFrom(value)))
                                        .build());
                    }
                    try (ShardStore.WriteSession w = shard.beginWrite(epochs[s])) {
                        w.apply(ops);
                    }
                }
                if (s % 200 == 199) {
                    engine.closeAllIdleShards();
                }
            }
            engine.closeAllIdleShards();
            System.out.printf(
                    "created %d shards with %d keys each in %d ms%n",
                    shards, keys, (System.nanoTime() - began) / 1_000_000);
            print("all shards closed", 0);
            began = System.nanoTime();
            int[] steps = {1, 10, 100, 500, 1000, 2000, 4000, 8000, 16000};
            int next = 0;
            for (int s = 0; s < shards; s++) {
                t.shard(s).get(epochs[s], key(0));
                if (next < steps.length && s + 1 == steps[next]) {
                    print("open shards (read one key each)", engine.openShardCount());
                    next++;
                }
            }
            System.out.printf(
                    "reopened %d shards in %d ms (%.2f ms per open)%n",
                    shards,
                    (System.nanoTime() - began) / 1_000_000,
                    (System.nanoTime() - began) / 1e6 / shards);
            print(
                    "all open, block cache " + engine.blockCacheUsage() / 1024 + " KiB",
                    engine.openShardCount());
            for (int s = 0; s < shards; s++) {
                try (ShardStore.WriteSession w = t.shard(s).beginWrite(epochs[s])) {
                    w.apply(
                            List.of(
                                    WriteOp.newBuilder()
                                            .setPut(
                                                    Put.newBuilder()
                                                            .setKey(ByteString.copyFromUtf8("w")))
                                            .build()));
                }
            }
            print(
                    "all open, one write each, block cache "
                            + engine.blockCacheUsage() / 1024
                            + " KiB",
                    engine.openShardCount());
            began = System.nanoTime();
            engine.closeAllIdleShards();
            System.out.printf(
                    "flushed and closed %d shards in %d ms%n",
                    shards, (System.nanoTime() - began) / 1_000_000);
            print("all closed again", 0);
        }
    }

    private static byte[] key(int k) {
        return String.format("key-%08d", k).getBytes(StandardCharsets.US_ASCII);
    }

    private static void print(String what, int open) throws IOException {
        long fds;
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            fds = s.count();
        }
        String rss = "?";
        String threads = "?";
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                rss = line.substring(6).trim();
            } else if (line.startsWith("Threads:")) {
                threads = line.substring(8).trim();
            }
        }
        long heap = Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory();
        System.out.printf(
                "%-55s open=%6d fds=%6d rss=%12s threads=%4s heapUsed=%d MiB%n",
                what, open, fds, rss, threads, heap >> 20);
    }
}
