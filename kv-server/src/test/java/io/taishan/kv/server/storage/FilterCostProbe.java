package io.taishan.kv.server.storage;

import io.taishan.kv.client.FilterUnavailableException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.proto.Put;
import io.taishan.kv.proto.WriteOp;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Not a test: what a shard filter costs, for the README. Loads one shard with N keys (16-byte keys,
 * values of the given size), then measures a rebuild from scratch (the saved filter removed, as
 * after an unclean stop) unthrottled and at the default rate limit, the saved file, and fetches of
 * the filter through the client.
 *
 * <pre>
 * java -Xmx2g -XX:MaxDirectMemorySize=2g -cp $CP io.taishan.kv.server.storage.FilterCostProbe \
 *     /tmp/filterprobe 5 100
 * </pre>
 */
public final class FilterCostProbe {
    private FilterCostProbe() {}

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        long keys = (long) (Double.parseDouble(args[1]) * 1_000_000);
        int valueBytes = Integer.parseInt(args[2]);
        DurableFiles.deleteTree(dir);
        long logicalBytes = keys * (16 + valueBytes);
        System.out.printf(
                "%,d keys of 16 bytes with %d-byte values: %,d bytes of keys and values%n",
                keys, valueBytes, logicalBytes);

        ShardLease lease;
        try (EmbeddedKvServer server = start(dir, 0);
                KvStore kv = connect(server)) {
            kv.createTable("t", 1);
            lease = kv.openShard("t", 0);
            Shard shard = server.storage().tableStore("t").shard(0);
            long start = System.nanoTime();
            load(shard, lease.epoch(), keys, valueBytes);
            System.out.printf("loaded in %d ms%n", millisSince(start));
            awaitNoRebuild(server, shard);
            FilterStatus status = shard.filterStatus();
            System.out.printf(
                    "after the load: version %d, %,d off-heap bytes (%.2f bytes per key),"
                            + " estimated fpp %.3f%%%n",
                    status.version(),
                    status.memoryBytes(),
                    (double) status.memoryBytes() / keys,
                    100 * status.estimatedFpp());
            server.storage().closeAllIdleStores();
            Path saved = shard.store().liveDir().resolve(FilterBundle.LIVE_FILE_NAME);
            System.out.printf(
                    "saved filter: %,d bytes; shard on disk: %,d bytes%n",
                    Files.size(saved), DurableFiles.sizeOf(shard.store().liveDir()));

            rebuildFromScratch(server, kv, lease, saved, keys, "unthrottled");

            for (int i = 0; i < 3; i++) {
                long t = System.nanoTime();
                try (ShardFilter filter = kv.filters().orElseThrow().fetchFilter(lease)) {
                    long ms = millisSince(t);
                    long bytes = filter.filter().serializedSizeBytes();
                    System.out.printf(
                            "fetch %d: %,d bytes in %d ms (%.0f MB/s)%n",
                            i + 1, bytes, ms, bytes / 1e3 / Math.max(1, ms));
                }
            }
        }
        // Default rate limit: 64 MiB/s of keys and values.
        try (EmbeddedKvServer server = start(dir, FilterOptions.DEFAULTS.rebuildBytesPerSecond());
                KvStore kv = connect(server)) {
            Path saved =
                    server.storage()
                            .tableStore("t")
                            .shard(0)
                            .store()
                            .liveDir()
                            .resolve(FilterBundle.LIVE_FILE_NAME);
            rebuildFromScratch(server, kv, lease, saved, keys, "at 64 MiB/s");
        }
    }

    private static EmbeddedKvServer start(Path dir, long rebuildBytesPerSecond) {
        return EmbeddedKvServer.start(
                KvServerConfig.builder()
                        .dataDir(dir)
                        .filters(
                                new FilterOptions(
                                        0.01, 64L << 20, 1L << 30, 1, rebuildBytesPerSecond, 4))
                        .build());
    }

    private static KvStore connect(EmbeddedKvServer server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(120))
                        .build());
    }

    private static void load(Shard shard, long epoch, long keys, int valueBytes) {
        Random random = new Random(1);
        byte[] value = new byte[valueBytes];
        for (long from = 0; from < keys; from += 100_000) {
            List<WriteOp> ops = new ArrayList<>(100_000);
            for (long i = from; i < Math.min(keys, from + 100_000); i++) {
                random.nextBytes(value);
                ByteBuffer key = ByteBuffer.allocate(16);
                key.putInt(0x1234_5678)
                        .putLong(Long.rotateLeft(i * 0x9E3779B97F4A7C15L, 17))
                        .putInt(7);
                ops.add(
                        WriteOp.newBuilder()
                                .setPut(
                                        Put.newBuilder()
                                                .setKey(
                                                        com.google.protobuf.ByteString.copyFrom(
                                                                key.array()))
                                                .setValue(
                                                        com.google.protobuf.ByteString.copyFrom(
                                                                value)))
                                .build());
            }
            shard.write(epoch, ops);
        }
    }

    private static void rebuildFromScratch(
            EmbeddedKvServer server,
            KvStore kv,
            ShardLease lease,
            Path saved,
            long keys,
            String how)
            throws IOException, InterruptedException {
        server.storage().closeAllIdleStores();
        Files.deleteIfExists(saved);
        awaitQuiet();
        long[] ioBefore = io();
        long cpuBefore = cpuNanos();
        long start = System.nanoTime();
        while (true) {
            try (ShardFilter filter = kv.filters().orElseThrow().fetchFilter(lease)) {
                break;
            } catch (FilterUnavailableException e) {
                Thread.sleep(5);
            }
        }
        long ms = millisSince(start);
        long[] ioAfter = io();
        Shard shard = server.storage().tableStore("t").shard(0);
        FilterStatus status = shard.filterStatus();
        System.out.printf(
                "rebuild from scratch %s: %,d keys in %d ms = %.0f ms per million keys;"
                        + " read(2) %,d bytes, from the device %,d bytes (%.1f MB per million keys);"
                        + " process CPU %.0f ms%n",
                how,
                status.keysAtBuild(),
                ms,
                ms * 1e6 / keys,
                ioAfter[0] - ioBefore[0],
                ioAfter[1] - ioBefore[1],
                (ioAfter[0] - ioBefore[0]) / 1e6 / (keys / 1e6),
                (cpuNanos() - cpuBefore) / 1e6);
    }

    private static void awaitNoRebuild(EmbeddedKvServer server, Shard shard)
            throws InterruptedException {
        while (server.storage().filterRebuildsPending() > 0
                || shard.filterStatus().rebuildRunning()) {
            Thread.sleep(20);
        }
    }

    /** Until the background compactions after the load stopped reading. */
    private static void awaitQuiet() throws IOException, InterruptedException {
        long before = io()[0];
        while (true) {
            Thread.sleep(1000);
            long now = io()[0];
            if (now - before < (1 << 20)) {
                return;
            }
            before = now;
        }
    }

    /** rchar (read(2) bytes, page cache included) and read_bytes (from the device). */
    private static long[] io() throws IOException {
        long rchar = 0;
        long readBytes = 0;
        for (String line : Files.readAllLines(Path.of("/proc/self/io"))) {
            if (line.startsWith("rchar:")) {
                rchar = Long.parseLong(line.substring(6).trim());
            } else if (line.startsWith("read_bytes:")) {
                readBytes = Long.parseLong(line.substring(11).trim());
            }
        }
        return new long[] {rchar, readBytes};
    }

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean)
                        java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static long millisSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
