package io.taishan.kv.server;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableRestore;
import io.taishan.kv.client.DurableSnapshot;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.storage.DurableFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * Not a test: what a snapshot's trip through checkpoint storage ({@code file://}) costs end to end
 * on this machine, through a real node and the client: the first upload of a cut of about {@code
 * MiB} of data, the next checkpoint's upload after a few writes (reusing the unchanged files), a
 * restore on a node that lost its disk (download, verification, fork) and the same restore on a
 * node that holds the snapshot.
 *
 * <pre>
 * java -cp kv-server/target/test-classes:kv-server/target/classes:$(test classpath) \
 *     io.taishan.kv.server.DurableSnapshotProbe [MiB] [ms to let compactions settle]
 * </pre>
 */
public final class DurableSnapshotProbe {
    private DurableSnapshotProbe() {}

    public static void main(String[] args) throws Exception {
        int mib = args.length > 0 ? Integer.parseInt(args[0]) : 128;
        long settleMillis = args.length > 1 ? Long.parseLong(args[1]) : 10_000;
        Path tmp = Files.createTempDirectory("durable-snapshot-probe");
        String shared = tmp.resolve("checkpoints/shared").toUri().toString();
        int shards = 8;
        int[] all = IntStream.range(0, shards).toArray();
        try (DurableNode node = new DurableNode(tmp.resolve("node"), DurableNode.fileStorage())) {
            DurableSnapshot first;
            DurableSnapshot second;
            try (KvStore kv = node.connect()) {
                kv.createTable("t", shards);
                List<ShardLease> leases = kv.openShards("t", all, "w", false);
                Random random = new Random(1);
                int valueBytes = 16 << 10;
                int perShardPerBatch = 16;
                long batches = ((long) mib << 20) / ((long) valueBytes * perShardPerBatch * shards);
                int key = 0;
                for (int b = 0; b < batches; b++) {
                    WriteBatch batch = new WriteBatch("t");
                    for (ShardLease lease : leases) {
                        for (int i = 0; i < perShardPerBatch; i++) {
                            byte[] value = new byte[valueBytes];
                            random.nextBytes(value);
                            batch.put(lease, DurableNode.bytes("k" + key++), value);
                        }
                    }
                    kv.write(batch);
                }
                // Compactions of the load settle first, as between a job's checkpoints: a file
                // they rewrite after the first upload is a new file for the second.
                Thread.sleep(settleMillis);
                kv.snapshot(leases, 1, false);
                long start = System.nanoTime();
                first =
                        kv.durable()
                                .orElseThrow()
                                .uploadSnapshot("t", 1, all, shared, chk(tmp, 1), Set.of());
                report("upload, first", start, first.uploadedBytes(), files(first));

                WriteBatch few = new WriteBatch("t");
                for (ShardLease lease : leases) {
                    byte[] value = new byte[valueBytes];
                    random.nextBytes(value);
                    few.put(lease, DurableNode.bytes("k" + key++), value);
                }
                kv.write(few);
                kv.snapshot(leases, 2, false);
                Set<String> allowed = new HashSet<>();
                first.cuts().forEach(c -> c.files().forEach(f -> allowed.add(f.path())));
                start = System.nanoTime();
                second =
                        kv.durable()
                                .orElseThrow()
                                .uploadSnapshot("t", 2, all, shared, chk(tmp, 2), allowed);
                report("upload, next (reuse)", start, second.uploadedBytes(), files(second));
            }
            node.loseDiskAndRestart();
            try (KvStore kv = node.connect()) {
                kv.createTable("t", shards);
                long start = System.nanoTime();
                DurableRestore fetched =
                        kv.durable()
                                .orElseThrow()
                                .restoreShards("t", "w", restores(all, second), second.cuts());
                report("restore, lost disk", start, fetched.downloadedBytes(), files(second));
                start = System.nanoTime();
                DurableRestore held =
                        kv.durable()
                                .orElseThrow()
                                .restoreShards("t", "w", restores(all, second), second.cuts());
                report("restore, held", start, held.downloadedBytes(), 0);
            }
        } finally {
            DurableFiles.deleteTree(tmp);
        }
    }

    private static String chk(Path tmp, int id) {
        return tmp.resolve("checkpoints/chk-" + id).toUri().toString();
    }

    private static int files(DurableSnapshot s) {
        return s.cuts().stream().mapToInt(c -> c.files().size() + 1).sum();
    }

    private static List<ShardRestore> restores(int[] shards, DurableSnapshot snapshot) {
        DurableCut cut = snapshot.cuts().get(0);
        List<ShardRestore> restores = new ArrayList<>();
        for (int s : shards) {
            restores.add(new ShardRestore(s, "t", 2, cut.cutId()));
        }
        return restores;
    }

    private static void report(String what, long startNanos, long bytes, int files) {
        double seconds = (System.nanoTime() - startNanos) / 1e9;
        System.out.printf(
                "%-22s %8.1f MiB %4d objects %7.0f ms %8.1f MiB/s%n",
                what, bytes / 1048576.0, files, seconds * 1000, bytes / 1048576.0 / seconds);
    }
}
