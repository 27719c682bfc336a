package io.taishan.demo;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.GrpcKvStore;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.NodeHealth;
import io.taishan.kv.client.ScanRange;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.client.WriteResult;
import io.taishan.kv.server.EmbeddedKvServer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The one-command demo: starts an embedded kv-server on a loopback port and drives it through the
 * client the way the state backend will: a table with one shard per key group, ordered batched
 * writes with a server-side append, a snapshot cut by a marker in the write stream, a rollback
 * after a failure, a clone into another job's table, fencing of a zombie writer, and the watermark
 * release of old snapshots.
 */
public final class TaishanDemo {
    private static final int SHARDS = 8;
    private static final int KEYS_PER_SHARD = 5_000;

    private TaishanDemo() {}

    public static void main(String[] args) throws Exception {
        long start = System.nanoTime();
        try (EmbeddedKvServer server = EmbeddedKvServer.start();
                KvStore kv =
                        GrpcKvStore.connect(
                                KvClientConfig.forAddresses(server.address()).build())) {
            say(
                    "Started an embedded kv-server on %s (data in %s)",
                    server.address(), server.dataDir());
            for (NodeHealth h : kv.health()) {
                say(
                        "  node %d at %s: %s, version %s",
                        h.nodeIndex(), h.address(), h.status(), h.version());
            }

            String table = "demo-job-a";
            kv.createTable(table, SHARDS);
            say("Created table '%s' with %d shards (shard i = Flink key group i)", table, SHARDS);

            List<ShardLease> leases = new ArrayList<>();
            for (int shard = 0; shard < SHARDS; shard++) {
                leases.add(kv.openShard(table, shard));
            }
            say("Opened every shard; epochs %s", epochs(leases));

            long t0 = System.nanoTime();
            for (ShardLease lease : leases) {
                WriteBatch batch = new WriteBatch(table);
                for (int i = 0; i < KEYS_PER_SHARD; i++) {
                    batch.put(lease, key(lease.shard(), i), utf8("v1-" + i));
                }
                batch.append(lease, utf8("events"), utf8("created"));
                kv.write(batch);
            }
            say(
                    "Wrote %,d keys in %d batches (one per shard) in %d ms",
                    SHARDS * KEYS_PER_SHARD, SHARDS, millisSince(t0));

            // Checkpoint 1: the marker cuts each shard's stream exactly after the append below.
            WriteBatch checkpoint = new WriteBatch(table);
            for (ShardLease lease : leases) {
                checkpoint.append(lease, utf8("events"), utf8("checkpointed"));
                checkpoint.snapshotMarker(lease, 1, false);
                checkpoint.put(lease, key(lease.shard(), 0), utf8("after-marker"));
            }
            t0 = System.nanoTime();
            WriteResult result = kv.write(checkpoint);
            say(
                    "Checkpoint 1: a snapshot marker in each shard's write stream; %d snapshots durable in %d ms",
                    result.snapshots().size(), millisSince(t0));
            SnapshotInfo s0 = result.snapshots().get(0);
            say(
                    "  shard %d snapshot 1: %,d bytes in %d files",
                    s0.shard(), s0.sizeBytes(), s0.fileCount());

            ShardLease shard3 = leases.get(3);
            WriteBatch later = new WriteBatch(table);
            for (int i = 0; i < 100; i++) {
                later.delete(shard3, key(3, i));
            }
            later.append(shard3, utf8("events"), utf8("lost-in-failure"));
            kv.write(later);
            say(
                    "After the checkpoint shard 3 got 100 deletes; key 0 = %s, events = %s",
                    str(kv.get(shard3, key(3, 0))), str(kv.get(shard3, utf8("events"))));

            say("A failure: the job restarts from checkpoint 1 and rolls shard 3 back");
            t0 = System.nanoTime();
            ShardLease restored = kv.restore(table, 3, 1);
            say(
                    "  restored in %d ms, new epoch %d; key 0 = %s (its 'after-marker' write came after"
                            + " the cut), key 50 = %s, events = %s",
                    millisSince(t0),
                    restored.epoch(),
                    str(kv.get(restored, key(3, 0))),
                    str(kv.get(restored, key(3, 50))),
                    str(kv.get(restored, utf8("events"))));

            try {
                kv.write(new WriteBatch(table).put(shard3, utf8("zombie"), utf8("write")));
                say("  ERROR: the zombie's write was accepted");
            } catch (FencedException e) {
                say("  the old attempt's lease is fenced: %s", e.getMessage());
            }

            String otherJob = "demo-job-b";
            kv.createTable(otherJob, SHARDS);
            t0 = System.nanoTime();
            ShardLease cloned = kv.cloneShard(table, 5, 1, otherJob);
            long entries = 0;
            try (CloseableIterator<KvEntry> it = kv.scan(cloned, ScanRange.all(), 1000, true)) {
                while (it.hasNext()) {
                    it.next();
                    entries++;
                }
            }
            say(
                    "A new job '%s' started shard 5 from job a's snapshot 1 in %d ms: %,d entries, no data copied",
                    otherJob, millisSince(t0), entries);

            WriteBatch checkpoint2 = new WriteBatch(table);
            for (int shard = 0; shard < SHARDS; shard++) {
                ShardLease lease = shard == 3 ? restored : leases.get(shard);
                checkpoint2.snapshotMarker(lease, 2, false);
            }
            kv.write(checkpoint2);
            long reused =
                    kv.listSnapshots(table).stream()
                            .filter(s -> s.snapshotId() == 2 && s.reused())
                            .count();
            say(
                    "Checkpoint 2: %d of %d shards had no writes since checkpoint 1 and reused its files",
                    reused, SHARDS);

            int dropped = kv.dropSnapshotsBelow(table, 2);
            say(
                    "Checkpoint 1 subsumed: released %d snapshots below 2; %d left",
                    dropped, kv.listSnapshots(table).size());
            say(
                    "Tables now: %s",
                    kv.listTables().stream()
                            .map(t -> t.name() + "(" + t.shardCount() + ")")
                            .toList());
        }
        say("Demo finished in %d ms; the embedded server stopped and flushed.", millisSince(start));
    }

    private static byte[] key(int shard, int i) {
        return utf8(String.format("k%d-%06d", shard, i));
    }

    private static List<Long> epochs(List<ShardLease> leases) {
        return leases.stream().map(ShardLease::epoch).toList();
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String str(byte[] bytes) {
        return bytes == null ? "<absent>" : "'" + new String(bytes, StandardCharsets.UTF_8) + "'";
    }

    private static long millisSince(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }

    private static void say(String format, Object... args) {
        System.out.println(String.format(format, args));
    }
}
