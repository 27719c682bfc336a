package io.taishan.benchmarks.kv;

import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Sequential {@code Get} and {@code MultiGet} latency on one warm shard whose keys are all present:
 * one caller, one call in flight, so each figure is the full round trip of one RPC.
 */
final class ReadBenchmark {
    static final int VALUE_BYTES = 100;
    static final int MULTI_GET_KEYS = 100;

    private final KvStore store;
    private final BenchOptions options;
    private final PrintStream out;

    ReadBenchmark(KvStore store, BenchOptions options, PrintStream out) {
        this.store = store;
        this.options = options;
        this.out = out;
    }

    void run() {
        String table = options.tablePrefix() + "read";
        store.createTable(table, 1);
        try {
            ShardLease lease = store.openShard(table, 0);
            byte[][] keys = load(lease, options.readKeys());
            measureGet(lease, keys);
            measureMultiGet(lease, keys);
        } finally {
            store.dropTable(table);
        }
    }

    private byte[][] load(ShardLease lease, int keyCount) {
        SplittableRandom random = new SplittableRandom(1);
        byte[][] keys = new byte[keyCount][];
        WriteBatch batch = new WriteBatch(lease.table());
        for (int i = 0; i < keyCount; i++) {
            keys[i] = BenchKeys.key(i);
            batch.put(lease, keys[i], BenchKeys.randomValue(random, VALUE_BYTES));
            if (batch.opCount() == 1000) {
                store.write(batch);
                batch = new WriteBatch(lease.table());
            }
        }
        if (!batch.isEmpty()) {
            store.write(batch);
        }
        return keys;
    }

    private void measureGet(ShardLease lease, byte[][] keys) {
        int calls = options.getCallsPerRun();
        SplittableRandom random = new SplittableRandom(2);
        runGets(lease, keys, random, new Samples(options.warmupGetCalls()));
        double[] p50 = new double[options.runs()];
        double[] p99 = new double[options.runs()];
        double[] p999 = new double[options.runs()];
        double[] max = new double[options.runs()];
        double[] callsPerSecond = new double[options.runs()];
        for (int run = 0; run < options.runs(); run++) {
            Samples samples = new Samples(calls);
            long start = System.nanoTime();
            runGets(lease, keys, random, samples);
            long elapsed = System.nanoTime() - start;
            p50[run] = micros(samples.percentile(0.50));
            p99[run] = micros(samples.percentile(0.99));
            p999[run] = micros(samples.percentile(0.999));
            max[run] = micros(samples.percentile(1.0));
            callsPerSecond[run] = calls * 1e9 / elapsed;
        }
        out.printf(
                "### Get: one key per call, sequential, warm, all keys present%n%n"
                        + "%,d keys of %d B + %d B values in one shard; %,d warm-up calls, then"
                        + " %d runs of %,d calls on random keys.%n%n",
                keys.length,
                BenchKeys.KEY_BYTES,
                VALUE_BYTES,
                options.warmupGetCalls(),
                options.runs(),
                calls);
        Table.forSpreads("Get")
                .row("p50", "µs", Spread.of(p50), 0)
                .row("p99", "µs", Spread.of(p99), 0)
                .row("p999", "µs", Spread.of(p999), 0)
                .row("max", "µs", Spread.of(max), 0)
                .row("throughput (1 caller)", "calls/s", Spread.of(callsPerSecond), 0)
                .print(out);
    }

    private void runGets(ShardLease lease, byte[][] keys, SplittableRandom random, Samples into) {
        for (int i = 0, n = into.capacity(); i < n; i++) {
            byte[] key = keys[random.nextInt(keys.length)];
            long start = System.nanoTime();
            byte[] value = store.get(lease, key);
            into.add(System.nanoTime() - start);
            if (value == null || value.length != VALUE_BYTES) {
                throw new IllegalStateException("Get missed a loaded key: the data is not there");
            }
        }
    }

    private void measureMultiGet(ShardLease lease, byte[][] keys) {
        int calls = options.multiGetCallsPerRun();
        SplittableRandom random = new SplittableRandom(3);
        runMultiGets(lease, keys, random, new Samples(options.warmupMultiGetCalls()));
        double[] p50 = new double[options.runs()];
        double[] p99 = new double[options.runs()];
        double[] p999 = new double[options.runs()];
        double[] keysPerSecond = new double[options.runs()];
        for (int run = 0; run < options.runs(); run++) {
            Samples samples = new Samples(calls);
            long start = System.nanoTime();
            runMultiGets(lease, keys, random, samples);
            long elapsed = System.nanoTime() - start;
            p50[run] = micros(samples.percentile(0.50));
            p99[run] = micros(samples.percentile(0.99));
            p999[run] = micros(samples.percentile(0.999));
            keysPerSecond[run] = (double) calls * MULTI_GET_KEYS * 1e9 / elapsed;
        }
        out.printf(
                "### MultiGet: %d random keys per call, sequential, warm, all present%n%n"
                        + "Same shard; %,d warm-up calls, then %d runs of %,d calls.%n%n",
                MULTI_GET_KEYS, options.warmupMultiGetCalls(), options.runs(), calls);
        Spread p50Spread = Spread.of(p50);
        Table.forSpreads("MultiGet of " + MULTI_GET_KEYS + " keys")
                .row("p50 per call", "µs", p50Spread, 0)
                .row("p99 per call", "µs", Spread.of(p99), 0)
                .row("p999 per call", "µs", Spread.of(p999), 0)
                .row("p50 per key", "µs", scale(p50Spread, 1.0 / MULTI_GET_KEYS), 1)
                .row("keys read (1 caller)", "keys/s", Spread.of(keysPerSecond), 0)
                .print(out);
    }

    private void runMultiGets(
            ShardLease lease, byte[][] keys, SplittableRandom random, Samples into) {
        for (int i = 0, n = into.capacity(); i < n; i++) {
            List<byte[]> batch = new ArrayList<>(MULTI_GET_KEYS);
            for (int k = 0; k < MULTI_GET_KEYS; k++) {
                batch.add(keys[random.nextInt(keys.length)]);
            }
            long start = System.nanoTime();
            List<byte[]> values = store.multiGet(lease, batch);
            into.add(System.nanoTime() - start);
            if (values.size() != MULTI_GET_KEYS) {
                throw new IllegalStateException("MultiGet returned " + values.size() + " values");
            }
            for (byte[] value : values) {
                if (value == null) {
                    throw new IllegalStateException("MultiGet missed a loaded key");
                }
            }
        }
    }

    private static Spread scale(Spread spread, double factor) {
        return new Spread(
                spread.median() * factor,
                spread.min() * factor,
                spread.max() * factor,
                spread.runs());
    }

    static double micros(long nanos) {
        return nanos / 1_000.0;
    }
}
