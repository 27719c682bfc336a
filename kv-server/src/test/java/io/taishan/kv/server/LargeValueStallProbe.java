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
 * Not a test: {@code Get} latency of small keys on one shard, alone and while another client
 * writes, then reads, values of VALUE_MIB MiB on another shard back to back; for the kv-server
 * README (large values: do they stall other shards' small calls?). The big values go by their own
 * client (another job), as in production.
 *
 * <pre>
 * java -Xmx3g -cp $CP io.taishan.kv.server.LargeValueStallProbe HOST:PORT|embedded VALUE_MIB ROUNDS
 * </pre>
 */
public final class LargeValueStallProbe {
    private static final int KEYS = 20_000;
    private static final int GETS = 10_000;

    private LargeValueStallProbe() {}

    public static void main(String[] args) throws Exception {
        String where = args[0];
        int valueBytes = Integer.parseInt(args[1]) << 20;
        int rounds = Integer.parseInt(args[2]);
        EmbeddedKvServer embedded = null;
        String address = where;
        if (where.equals("embedded")) {
            Path dir = Files.createTempDirectory("large-value-stall");
            embedded = EmbeddedKvServer.start(KvServerConfig.builder().dataDir(dir).build());
            address = embedded.address();
        }
        try (KvStore small = KvStores.connect(KvClientConfig.forAddresses(address).build());
                KvStore big = KvStores.connect(KvClientConfig.forAddresses(address).build())) {
            String table = "stall_" + ProcessHandle.current().pid();
            small.createTable(table, 2);
            ShardLease reads = small.openShard(table, 0);
            ShardLease bigShard = big.openShard(table, 1);
            byte[][] keys = load(small, reads);
            byte[] value = new byte[valueBytes];
            new SplittableRandom(5).nextBytes(value);
            big.write(new WriteBatch(table).put(bigShard, "big-0".getBytes(), value));
            SplittableRandom random = new SplittableRandom(2);
            measure(small, reads, keys, random);
            System.out.printf(
                    "p50 / p99 / p999 of %,d small Gets in µs; big values of %d MiB%n",
                    GETS, valueBytes >> 20);
            for (int round = 0; round < rounds; round++) {
                long[] alone = measure(small, reads, keys, random);
                String[] under = new String[2];
                double[] rate = new double[2];
                for (int mode = 0; mode < 2; mode++) {
                    boolean writing = mode == 0;
                    AtomicBoolean stop = new AtomicBoolean();
                    AtomicLong moved = new AtomicLong();
                    Thread mover =
                            new Thread(
                                    () -> {
                                        int i = 0;
                                        while (!stop.get()) {
                                            if (writing) {
                                                big.write(
                                                        new WriteBatch(table)
                                                                .put(
                                                                        bigShard,
                                                                        ("big-" + (i++ % 4))
                                                                                .getBytes(),
                                                                        value));
                                            } else if (big.get(bigShard, "big-0".getBytes())
                                                    == null) {
                                                throw new IllegalStateException("big-0 missing");
                                            }
                                            moved.addAndGet(value.length);
                                        }
                                    });
                    mover.start();
                    long start = System.nanoTime();
                    long[] nanos = measure(small, reads, keys, random);
                    rate[mode] = moved.get() / ((System.nanoTime() - start) / 1e9) / 1e6;
                    stop.set(true);
                    mover.join();
                    under[mode] = percentiles(nanos);
                }
                System.out.printf(
                        "round %d: alone %s | big writes %s (%.0f MB/s) | big reads %s (%.0f"
                                + " MB/s)%n",
                        round, percentiles(alone), under[0], rate[0], under[1], rate[1]);
            }
            small.dropTable(table);
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
            byte[] v = new byte[100];
            random.nextBytes(v);
            batch.put(lease, keys[i], v);
            if (batch.opCount() == 1000) {
                kv.write(batch);
                batch = new WriteBatch(lease.table());
            }
        }
        kv.write(batch);
        return keys;
    }

    private static long[] measure(
            KvStore kv, ShardLease lease, byte[][] keys, SplittableRandom random) {
        long[] nanos = new long[GETS];
        for (int i = 0; i < GETS; i++) {
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

    private static String percentiles(long[] sorted) {
        return String.format(
                "%.0f / %.0f / %.0f",
                sorted[sorted.length / 2] / 1e3,
                sorted[sorted.length * 99 / 100] / 1e3,
                sorted[sorted.length * 999 / 1000] / 1e3);
    }
}
