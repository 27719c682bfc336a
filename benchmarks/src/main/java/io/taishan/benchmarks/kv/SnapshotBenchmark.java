package io.taishan.benchmarks.kv;

import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.protocol.KvLimits;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Snapshot, restore and clone of one shard at several data sizes. They are meant to link files, not
 * copy bytes, so their time should stay flat while the shard grows a hundredfold.
 */
final class SnapshotBenchmark {
    private static final int PREFERRED_VALUE_BYTES = 4000;
    private static final int PREFERRED_REQUEST_BYTES = 1 << 20;
    private static final long MIB = 1L << 20;

    /** The index of the one unrecorded run before the measured ones of each operation. */
    private static final int WARM_UP_RUN = -1;

    private static final int WARM_UP_MIB = 4;

    private final KvStore store;
    private final BenchOptions options;
    private final Quiescence quiescence;
    private final PrintStream out;

    SnapshotBenchmark(KvStore store, BenchOptions options, Quiescence quiescence, PrintStream out) {
        this.store = store;
        this.options = options;
        this.quiescence = quiescence;
        this.out = out;
    }

    void run() {
        KvLimits limits = store.limits();
        int valueBytes = Math.min(PREFERRED_VALUE_BYTES, limits.maxValueBytes());
        int requestBytes = Math.min(PREFERRED_REQUEST_BYTES, limits.maxRequestBytes() / 2);
        int opsPerBatch =
                Math.max(
                        1,
                        Math.min(
                                limits.maxOpsPerRequest(),
                                requestBytes / (BenchKeys.KEY_BYTES + valueBytes + 16)));

        // The first shard measured tended to come out slower whatever its size: warm the server's
        // snapshot, restore and clone paths (and both JVMs' JIT) on a small shard first.
        measure(WARM_UP_MIB, valueBytes, opsPerBatch);
        List<SizeResult> results = new ArrayList<>();
        for (int megabytes : options.snapshotSizesMib()) {
            results.add(measure(megabytes, valueBytes, opsPerBatch));
        }
        print(results, valueBytes, opsPerBatch);
    }

    private SizeResult measure(int mebibytes, int valueBytes, int opsPerBatch) {
        int runs = options.snapshotRuns();
        String table = options.tablePrefix() + "snap_" + mebibytes;
        store.createTable(table, 1);
        try {
            ShardLease lease = store.openShard(table, 0);
            // The previous shard's drop may still be deleting files under the file system.
            quiescence.await();
            long keyCount = mebibytes * MIB / (BenchKeys.KEY_BYTES + valueBytes);
            long loadNanos = load(lease, keyCount, valueBytes, opsPerBatch);

            long snapshotId = 1;
            long start = System.nanoTime();
            single(store.snapshot(List.of(lease), snapshotId, false));
            double firstSnapshotMillis = millisSince(start);

            Quiescence.Wait settled = quiescence.await();

            // Reuse: no write since the previous snapshot, so the server may hand it back.
            start = System.nanoTime();
            SnapshotInfo reused = single(store.snapshot(List.of(lease), ++snapshotId, false));
            double reusedMillis = millisSince(start);

            // A dirty snapshot: one put since the last one, as in a checkpoint of a busy shard.
            double[] snapshotMillis = new double[runs];
            SnapshotInfo last = reused;
            long nextKey = keyCount;
            for (int run = WARM_UP_RUN; run < runs; run++) {
                store.write(
                        new WriteBatch(table).put(lease, BenchKeys.key(nextKey++), new byte[8]));
                start = System.nanoTime();
                last = single(store.snapshot(List.of(lease), ++snapshotId, false));
                record(snapshotMillis, run, start);
                if (last.reused()) {
                    throw new IllegalStateException("a snapshot after a write was reused: " + last);
                }
            }
            long restoreId = last.snapshotId();
            long lastKeyInSnapshot = nextKey - 1;

            double[] restoreMillis = new double[runs];
            double[] restoreReadMillis = new double[runs];
            for (int run = WARM_UP_RUN; run < runs; run++) {
                byte[] later = BenchKeys.key(nextKey++);
                store.write(new WriteBatch(table).put(lease, later, new byte[8]));
                start = System.nanoTime();
                lease = store.restore(table, 0, restoreId);
                record(restoreMillis, run, start);
                // The server may open the restored data lazily: the first read pays for that.
                requirePresent(lease, BenchKeys.key(0), "restore");
                record(restoreReadMillis, run, start);
                requirePresent(lease, BenchKeys.key(lastKeyInSnapshot), "restore");
                if (store.get(lease, later) != null) {
                    throw new IllegalStateException("restore kept a write made after the snapshot");
                }
            }

            double[] cloneMillis = new double[runs];
            double[] cloneReadMillis = new double[runs];
            for (int run = WARM_UP_RUN; run < runs; run++) {
                String target = table + "_clone_" + (run - WARM_UP_RUN);
                store.createTable(target, 1);
                try {
                    start = System.nanoTime();
                    ShardLease cloned = store.cloneShard(table, 0, restoreId, target);
                    record(cloneMillis, run, start);
                    requirePresent(cloned, BenchKeys.key(keyCount - 1), "clone");
                    record(cloneReadMillis, run, start);
                    requirePresent(cloned, BenchKeys.key(lastKeyInSnapshot), "clone");
                } finally {
                    store.dropTable(target);
                }
            }
            return new SizeResult(
                    mebibytes,
                    keyCount,
                    keyCount * (BenchKeys.KEY_BYTES + valueBytes),
                    loadNanos,
                    firstSnapshotMillis,
                    reusedMillis,
                    reused,
                    last,
                    Spread.of(snapshotMillis),
                    Spread.of(restoreMillis),
                    Spread.of(restoreReadMillis),
                    Spread.of(cloneMillis),
                    Spread.of(cloneReadMillis),
                    settled);
        } finally {
            store.dropTable(table);
        }
    }

    private long load(ShardLease lease, long keyCount, int valueBytes, int opsPerBatch) {
        SplittableRandom random = new SplittableRandom(keyCount);
        byte[][] values = new byte[64][];
        for (int i = 0; i < values.length; i++) {
            values[i] = BenchKeys.randomValue(random, valueBytes);
        }
        long start = System.nanoTime();
        WriteBatch batch = new WriteBatch(lease.table());
        for (long i = 0; i < keyCount; i++) {
            // A fresh random prefix per value keeps the 64 bodies from compressing as repeats.
            byte[] value = values[(int) (i % values.length)].clone();
            long salt = random.nextLong();
            for (int b = 0; b < 8; b++) {
                value[b] = (byte) (salt >>> (8 * b));
            }
            batch.put(lease, BenchKeys.key(i), value);
            if (batch.opCount() == opsPerBatch) {
                store.write(batch);
                batch = new WriteBatch(lease.table());
            }
        }
        if (!batch.isEmpty()) {
            store.write(batch);
        }
        return System.nanoTime() - start;
    }

    private void requirePresent(ShardLease lease, byte[] key, String after) {
        if (store.get(lease, key) == null) {
            throw new IllegalStateException(
                    "after " + after + ", a key written before the snapshot is missing");
        }
    }

    private static SnapshotInfo single(List<SnapshotInfo> infos) {
        if (infos.size() != 1) {
            throw new IllegalStateException("expected one shard snapshot, got " + infos);
        }
        return infos.get(0);
    }

    /** Keeps the time of a measured run; the warm-up run's is dropped. */
    private static void record(double[] millis, int run, long startNanos) {
        double elapsed = millisSince(startNanos);
        if (run != WARM_UP_RUN) {
            millis[run] = elapsed;
        }
    }

    private static double millisSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1e6;
    }

    private void print(List<SizeResult> results, int valueBytes, int opsPerBatch) {
        int runs = options.snapshotRuns();
        out.printf(
                "### Snapshot, restore, clone of one shard%n%n"
                        + "After a warm-up pass on a %d MiB shard, each shard is loaded with %d B keys + %d B random values (%,d puts per"
                        + " Write). Snapshot: one put, then a snapshot (so it is never reused);"
                        + " restore: one put, then a rollback to the last snapshot (the put must"
                        + " vanish); clone: into a fresh table, checked by reading. One warm-up and"
                        + " %d measured runs each, times seen by the client, RPC included.%n%n",
                WARM_UP_MIB, BenchKeys.KEY_BYTES, valueBytes, opsPerBatch, runs);

        Table data =
                new Table(
                        "shard data",
                        "keys",
                        "load s",
                        "load MB/s",
                        "first snapshot ms",
                        "files",
                        "snapshot MiB",
                        "reused snapshot ms",
                        "settled after s");
        for (SizeResult r : results) {
            data.row(
                    r.mebibytes() + " MiB",
                    Table.number(r.keys(), 0),
                    Table.number(r.loadNanos() / 1e9, 1),
                    Table.number(r.payloadBytes() / 1e6 / (r.loadNanos() / 1e9), 1),
                    Table.number(r.firstSnapshotMillis(), 1),
                    Table.number(r.last().fileCount(), 0),
                    Table.number(r.last().sizeBytes() / (double) MIB, 1),
                    Table.number(r.reusedMillis(), 1)
                            + (r.reused().reused() ? "" : " (not reused)"),
                    r.settled().toString());
        }
        data.print(out);
        out.println(
                "`files` and `snapshot MiB`: what the server reports for the last snapshot."
                        + " `first snapshot`: right after the load, so it also flushes the memtable."
                        + " Then the benchmark waits until for 2 s no file of the server's data dir"
                        + " has changed and the disk has been idle (`settled after`, at most 20 s:"
                        + " background compactions done) before the timed runs; it waits the same"
                        + " way before each load, after the previous shard's drop.");
        out.println();

        Table timings = Table.forSpreads("operation, shard data");
        for (SizeResult r : results) {
            timings.row("snapshot, " + r.mebibytes() + " MiB", "ms", r.snapshot(), 1);
        }
        for (SizeResult r : results) {
            timings.row("restore, " + r.mebibytes() + " MiB", "ms", r.restore(), 1);
        }
        for (SizeResult r : results) {
            timings.row(
                    "restore + first Get, " + r.mebibytes() + " MiB",
                    "ms",
                    r.restoreToFirstRead(),
                    1);
        }
        for (SizeResult r : results) {
            timings.row("clone, " + r.mebibytes() + " MiB", "ms", r.cloneShard(), 1);
        }
        for (SizeResult r : results) {
            timings.row(
                    "clone + first Get, " + r.mebibytes() + " MiB", "ms", r.cloneToFirstRead(), 1);
        }
        timings.print(out);

        if (results.size() > 1) {
            Comparator<SizeResult> bySize = Comparator.comparingInt(SizeResult::mebibytes);
            SizeResult small = results.stream().min(bySize).orElseThrow();
            SizeResult large = results.stream().max(bySize).orElseThrow();
            out.printf(
                    "Flatness, median at %d MiB / median at %d MiB (data x%.0f, files x%.1f):"
                            + " snapshot x%.2f, restore x%.2f, clone x%.2f%n%n",
                    large.mebibytes(),
                    small.mebibytes(),
                    (double) large.payloadBytes() / small.payloadBytes(),
                    (double) large.last().fileCount() / Math.max(1, small.last().fileCount()),
                    large.snapshot().median() / small.snapshot().median(),
                    large.restore().median() / small.restore().median(),
                    large.cloneShard().median() / small.cloneShard().median());
        }
    }

    private record SizeResult(
            int mebibytes,
            long keys,
            long payloadBytes,
            long loadNanos,
            double firstSnapshotMillis,
            double reusedMillis,
            SnapshotInfo reused,
            SnapshotInfo last,
            Spread snapshot,
            Spread restore,
            Spread restoreToFirstRead,
            Spread cloneShard,
            Spread cloneToFirstRead,
            Quiescence.Wait settled) {}
}
