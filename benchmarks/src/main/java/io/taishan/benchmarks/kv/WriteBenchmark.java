package io.taishan.benchmarks.kv;

import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import java.io.PrintStream;
import java.util.SplittableRandom;

/**
 * Put throughput of one caller into one shard at several batch sizes, one {@code Write} RPC per
 * batch and one batch in flight: what batching buys over per-op round trips.
 */
final class WriteBenchmark {
    static final int VALUE_BYTES = 100;

    /** Random keys over this many distinct indexes: mostly fresh keys, some overwrites. */
    private static final long KEY_SPACE = 1L << 24;

    private final KvStore store;
    private final BenchOptions options;
    private final PrintStream out;

    WriteBenchmark(KvStore store, BenchOptions options, PrintStream out) {
        this.store = store;
        this.options = options;
        this.out = out;
    }

    void run() {
        Table table = Table.forSpreads("Write, batch size");
        StringBuilder notes = new StringBuilder();
        for (int batchSize : options.writeBatchSizes()) {
            int opsPerRun = options.writeOpsPerRun(batchSize);
            Spread[] figures = measure(batchSize, opsPerRun);
            table.row(batchSize + ": ops", "ops/s", figures[0], 0)
                    .row(batchSize + ": payload", "MB/s", figures[1], 2)
                    .row(batchSize + ": per Write RPC", "µs", figures[2], 0);
            notes.append(
                    String.format(
                            "batch %,d: %d runs of %,d ops (%,d RPCs each) after one warm-up run%n",
                            batchSize, options.runs(), opsPerRun, opsPerRun / batchSize));
        }
        out.printf(
                "### Write: puts of %d B keys + %d B values into one shard, one batch in flight"
                        + "%n%n%s%n",
                BenchKeys.KEY_BYTES, VALUE_BYTES, notes);
        table.print(out);
    }

    /** ops/s, MB/s of key + value bytes, and mean µs per Write call, each over the runs. */
    private Spread[] measure(int batchSize, int opsPerRun) {
        String name = options.tablePrefix() + "write_" + batchSize;
        store.createTable(name, 1);
        try {
            ShardLease lease = store.openShard(name, 0);
            SplittableRandom random = new SplittableRandom(batchSize);
            byte[][] values = new byte[256][];
            for (int i = 0; i < values.length; i++) {
                values[i] = BenchKeys.randomValue(random, VALUE_BYTES);
            }
            writeRun(lease, batchSize, opsPerRun, random, values);
            double[] opsPerSecond = new double[options.runs()];
            double[] megabytesPerSecond = new double[options.runs()];
            double[] microsPerCall = new double[options.runs()];
            for (int run = 0; run < options.runs(); run++) {
                long elapsed = writeRun(lease, batchSize, opsPerRun, random, values);
                opsPerSecond[run] = opsPerRun * 1e9 / elapsed;
                megabytesPerSecond[run] =
                        opsPerSecond[run] * (BenchKeys.KEY_BYTES + VALUE_BYTES) / 1e6;
                microsPerCall[run] = elapsed / 1e3 / (opsPerRun / batchSize);
            }
            return new Spread[] {
                Spread.of(opsPerSecond), Spread.of(megabytesPerSecond), Spread.of(microsPerCall)
            };
        } finally {
            store.dropTable(name);
        }
    }

    /**
     * The batches are built inside the timed loop: copying keys and values into a request is part
     * of what a writer pays.
     */
    private long writeRun(
            ShardLease lease, int batchSize, int ops, SplittableRandom random, byte[][] values) {
        long start = System.nanoTime();
        for (int done = 0; done < ops; done += batchSize) {
            WriteBatch batch = new WriteBatch(lease.table());
            for (int i = 0; i < batchSize; i++) {
                batch.put(
                        lease,
                        BenchKeys.key(random.nextLong(KEY_SPACE)),
                        values[random.nextInt(values.length)]);
            }
            store.write(batch);
        }
        return System.nanoTime() - start;
    }
}
