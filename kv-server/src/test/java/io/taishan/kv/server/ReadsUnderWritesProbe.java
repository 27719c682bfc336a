package io.taishan.kv.server;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Not a test: {@code Get} latency of one reader while another thread of the same client writes 1
 * MiB batches back to back (one in flight, as the backend's write queue does), against the same
 * reader alone; for {@code docs/benchmarks.md}. With one connection per node the reads queue behind
 * the batches' frames; with their own connections they should not.
 *
 * <pre>
 * java -cp $CP io.taishan.kv.server.ReadsUnderWritesProbe HOST:PORT|embedded READ_CHANNELS ROUNDS
 * </pre>
 */
public final class ReadsUnderWritesProbe {
    private static final int KEYS = 100_000;
    private static final int VALUE_BYTES = 100;
    private static final int GETS_PER_ROUND = 20_000;
    private static final int BATCH_BYTES = 1 << 20;

    private ReadsUnderWritesProbe() {}

    public static void main(String[] args) throws Exception {
        String where = args[0];
        int readChannels = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        EmbeddedKvServer embedded = null;
        String address = where;
        if (where.equals("embedded")) {
            Path dir = Files.createTempDirectory("reads-under-writes");
            embedded = EmbeddedKvServer.start(KvServerConfig.builder().dataDir(dir).build());
            address = embedded.address();
        }
        try (KvStore kv =
                KvStores.connect(
                        KvClientConfig.forAddresses(address).readChannels(readChannels).build())) {
            String table = "probe_" + ProcessHandle.current().pid();
            kv.createTable(table, 2);
            ShardLease reads = kv.openShard(table, 0);
            ShardLease writes = kv.openShard(table, 1);
            byte[][] keys = load(kv, reads);
            SplittableRandom random = new SplittableRandom(2);
            measure(kv, reads, keys, random, GETS_PER_ROUND);
            System.out.printf(
                    "read channels %d; p50 / p99 / p999 of %,d Gets in µs%n",
                    readChannels, GETS_PER_ROUND);
            for (int round = 0; round < rounds; round++) {
                long[] alone = measure(kv, reads, keys, random, GETS_PER_ROUND);
                AtomicBoolean stop = new AtomicBoolean();
                AtomicLong written = new AtomicLong();
                Thread writer = new Thread(() -> writeUntil(kv, writes, stop, written));
                writer.start();
                long start = System.nanoTime();
                long[] underWrites = measure(kv, reads, keys, random, GETS_PER_ROUND);
                double seconds = (System.nanoTime() - start) / 1e9;
                stop.set(true);
                writer.join();
                System.out.printf(
                        "round %d: alone %s | under 1 MiB writes %s | writes %.1f MB/s%n",
                        round,
                        percentiles(alone),
                        percentiles(underWrites),
                        written.get() / seconds / 1e6);
            }
            kv.dropTable(table);
        } finally {
            if (embedded != null) {
                embedded.close();
            }
        }
    }

    private static byte[][] load(KvStore kv, ShardLease lease) {
        SplittableRandom random = new SplittableRandom(1);
        byte[][] keys = new byte[KEYS][];
        WriteBatch batch = new WriteBatch(lease.table());
        for (int i = 0; i < KEYS; i++) {
            keys[i] = String.format("key-%012d", i).getBytes();
            batch.put(lease, keys[i], bytes(random, VALUE_BYTES));
            if (batch.opCount() == 1000) {
                kv.write(batch);
                batch = new WriteBatch(lease.table());
            }
        }
        kv.write(batch);
        return keys;
    }

    private static long[] measure(
            KvStore kv, ShardLease lease, byte[][] keys, SplittableRandom random, int n) {
        long[] nanos = new long[n];
        for (int i = 0; i < n; i++) {
            long start = System.nanoTime();
            byte[] value = kv.get(lease, keys[random.nextInt(keys.length)]);
            nanos[i] = System.nanoTime() - start;
            if (value == null) {
                throw new IllegalStateException("a loaded key is missing");
            }
        }
        Arrays.sort(nanos);
        return nanos;
    }

    private static void writeUntil(
            KvStore kv, ShardLease lease, AtomicBoolean stop, AtomicLong written) {
        SplittableRandom random = new SplittableRandom(3);
        while (!stop.get()) {
            WriteBatch batch = new WriteBatch(lease.table());
            while (batch.estimatedBytes() < BATCH_BYTES) {
                batch.put(lease, bytes(random, 16), bytes(random, VALUE_BYTES));
            }
            kv.write(batch);
            written.addAndGet(batch.estimatedBytes());
        }
    }

    private static String percentiles(long[] sorted) {
        return String.format(
                "%.0f / %.0f / %.0f",
                sorted[sorted.length / 2] / 1e3,
                sorted[sorted.length * 99 / 100] / 1e3,
                sorted[sorted.length * 999 / 1000] / 1e3);
    }

    private static byte[] bytes(SplittableRandom random, int n) {
        byte[] b = new byte[n];
        random.nextBytes(b);
        return b;
    }
}
