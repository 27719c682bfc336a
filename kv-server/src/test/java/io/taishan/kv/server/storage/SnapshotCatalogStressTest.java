package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.marker;
import static io.taishan.kv.server.storage.Ops.put;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.WriteOp;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cuts are shared by many snapshots, reused by unchanged shards and kept by other cuts' filters, so
 * their reference counts see every path at once: writers checkpointing (markers split over
 * requests, as a subtask of many shards sends them), savepoints, uploads evicting older local
 * copies, subsumed snapshots dropped while other writers' markers are recorded, region failovers,
 * clones into another table, idle stores closed. Whatever the interleaving, every snapshot must
 * keep its cut and every cut must go once nothing needs it, in memory and across a restart.
 */
class SnapshotCatalogStressTest {
    private static final int SHARDS = 256;
    private static final int WRITERS = 4;

    @TempDir Path dir;

    @Test
    void referenceCountsHoldUnderConcurrentCheckpointsDropsRestoresAndClones() throws Exception {
        StorageEngine engine = StorageEngine.open(Ops.smallOptions(dir));
        engine.createTable("t", SHARDS, false);
        engine.createTable("u", SHARDS, false);
        TableStore t = engine.tableStore("t");
        TableStore u = engine.tableStore("u");
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService threads = Executors.newFixedThreadPool(WRITERS + 2);
        List<Future<?>> running = new ArrayList<>();
        long[] lastCheckpoint = new long[WRITERS];
        for (int w = 0; w < WRITERS; w++) {
            int index = w;
            running.add(threads.submit(() -> writer(t, index, lastCheckpoint, stop)));
        }
        running.add(threads.submit(() -> cloner(t, u, lastCheckpoint, stop)));
        running.add(
                threads.submit(
                        () -> {
                            while (!stop.get()) {
                                engine.closeAllIdleStores();
                                Thread.sleep(7);
                            }
                            return null;
                        }));
        Thread.sleep(4_000);
        stop.set(true);
        for (Future<?> f : running) {
            f.get(1, TimeUnit.MINUTES);
        }
        threads.shutdown();

        assertThat(t.catalog().referenceErrors()).isEmpty();
        assertThat(u.catalog().referenceErrors()).isEmpty();
        assertThat(t.snapshotCount()).isPositive();
        engine.close();

        StorageEngine reopened = StorageEngine.open(Ops.smallOptions(dir));
        try {
            assertThat(reopened.tableStore("t").catalog().referenceErrors()).isEmpty();
            assertThat(reopened.tableStore("u").catalog().referenceErrors()).isEmpty();
        } finally {
            reopened.close();
        }
    }

    /**
     * One subtask: writes some shards, checkpoints all, drops subsumed ones, now and then fails
     * over.
     */
    private static Void writer(TableStore t, int index, long[] lastCheckpoint, AtomicBoolean stop) {
        Random random = new Random(index);
        int from = index * SHARDS / WRITERS;
        int to = (index + 1) * SHARDS / WRITERS;
        int[] shards = range(from, to);
        String name = "w" + index;
        long epoch = t.openShards(name, shards, false)[0];
        long checkpoint = 0;
        int attempt = 0;
        while (!stop.get()) {
            checkpoint++;
            boolean savepoint = random.nextInt(10) == 0;
            List<TableWrite.ShardOps> writes = new ArrayList<>();
            int changed = random.nextInt(4);
            for (int i = 0; i < changed; i++) {
                int s = from + random.nextInt(to - from);
                writes.add(
                        new TableWrite.ShardOps(
                                s,
                                epoch,
                                List.of(put("k" + random.nextInt(50), "v" + checkpoint))));
            }
            if (!writes.isEmpty()) {
                t.write(writes, x -> null);
            }
            // The markers of one checkpoint in two requests, as a large subtask sends them.
            int half = from + random.nextInt(to - from);
            for (int[] part : new int[][] {range(from, half), range(half, to)}) {
                List<TableWrite.ShardOps> markers = new ArrayList<>();
                for (int s : part) {
                    markers.add(
                            new TableWrite.ShardOps(
                                    s, epoch, List.<WriteOp>of(marker(checkpoint, savepoint))));
                }
                if (!markers.isEmpty()) {
                    t.write(markers, x -> null);
                }
            }
            synchronized (lastCheckpoint) {
                lastCheckpoint[index] = checkpoint;
            }
            BitSet mine = new BitSet();
            mine.set(from, to);
            if (random.nextBoolean()) {
                // Durable checkpoints: uploaded, older local copies evicted.
                t.catalog().markUploaded(checkpoint, mine);
                t.catalog().evict(2, Long.MIN_VALUE);
            }
            if (savepoint) {
                t.dropSnapshot(mine, checkpoint - 10);
            }
            if (random.nextInt(3) > 0) {
                t.dropSnapshotsBelow(checkpoint - 1, mine);
            }
            if (random.nextInt(20) == 0) {
                // A region failover to the previous checkpoint, or the last if that one went.
                List<TableStore.Restore> restores = new ArrayList<>();
                long back = checkpoint - random.nextInt(2);
                for (int s : shards) {
                    restores.add(new TableStore.Restore(s, t, back));
                }
                try {
                    epoch = t.restoreShards(name + "-" + ++attempt, restores, true)[0];
                    checkpoint = back;
                } catch (KvServerException e) {
                    assertThat(e.code()).as("%s", e).isEqualTo(ErrorCode.SNAPSHOT_NOT_FOUND);
                }
            }
        }
        return null;
    }

    /**
     * A new job: clones a writer's range from its last checkpoint into another table, then goes on.
     */
    private static Void cloner(
            TableStore t, TableStore u, long[] lastCheckpoint, AtomicBoolean stop) {
        Random random = new Random(99);
        long next = 1_000;
        int job = 0;
        while (!stop.get()) {
            int index = random.nextInt(WRITERS);
            long checkpoint;
            synchronized (lastCheckpoint) {
                checkpoint = lastCheckpoint[index];
            }
            int from = index * SHARDS / WRITERS;
            int to = (index + 1) * SHARDS / WRITERS;
            List<TableStore.Restore> restores = new ArrayList<>();
            for (int s = from; s < to; s++) {
                restores.add(new TableStore.Restore(s, t, checkpoint));
            }
            long epoch;
            try {
                epoch = u.restoreShards("job" + ++job, restores, true)[0];
            } catch (KvServerException e) {
                assertThat(e.code()).as("%s", e).isEqualTo(ErrorCode.SNAPSHOT_NOT_FOUND);
                continue;
            }
            for (int round = 0; round < 3; round++) {
                next++;
                List<TableWrite.ShardOps> writes = new ArrayList<>();
                for (int s = from; s < to; s++) {
                    List<WriteOp> ops = new ArrayList<>();
                    if (random.nextInt(8) == 0) {
                        ops.add(put("c", "v" + next));
                    }
                    ops.add(marker(next, false));
                    writes.add(new TableWrite.ShardOps(s, epoch, ops));
                }
                u.write(writes, x -> null);
                BitSet range = new BitSet();
                range.set(from, to);
                u.dropSnapshotsBelow(next, range);
            }
        }
        return null;
    }

    private static int[] range(int from, int to) {
        int[] ids = new int[to - from];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = from + i;
        }
        return ids;
    }
}
