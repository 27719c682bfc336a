package io.taishan.kv.server.storage;

import com.google.protobuf.ByteString;
import io.taishan.kv.proto.Put;
import io.taishan.kv.proto.WriteOp;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Not a test: times snapshot, restore and clone of one shard at growing sizes, for the kv-server
 * README (they must not grow with the bytes). Arguments: a scratch dir and sizes in MiB.
 *
 * <pre>
 * java -cp target/test-classes:target/classes:$(cat target/test.cp) \
 *     io.taishan.kv.server.storage.SnapshotCostProbe /tmp/snapprobe 10 100 1000
 * </pre>
 */
public final class SnapshotCostProbe {
    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        try (StorageEngine engine = StorageEngine.open(StorageOptions.defaults(dir))) {
            for (int i = 1; i < args.length; i++) {
                int mib = Integer.parseInt(args[i]);
                String table = "size" + mib;
                engine.createTable(table, 1, true);
                engine.createTable(table + "-clone", 1, true);
                ShardStore shard = engine.tableStore(table).shard(0);
                long epoch = shard.open();
                load(shard, epoch, mib);
                // One unchanged snapshot first, so the timed one is a real checkpoint of new data.
                long t0 = System.nanoTime();
                SnapshotMeta snap;
                try (ShardStore.WriteSession w = shard.beginWrite(epoch)) {
                    snap = w.snapshot(1, false);
                }
                long t1 = System.nanoTime();
                long restored = shard.restore(1);
                shard.get(restored, new byte[] {0});
                long t2 = System.nanoTime();
                ShardStore clone = engine.tableStore(table + "-clone").shard(0);
                long cloned = clone.cloneFrom(shard, 1);
                clone.get(cloned, new byte[] {0});
                long t3 = System.nanoTime();
                System.out.printf(
                        "%5d MiB: %3d files, %6.1f MiB on disk; snapshot %6.1f ms (flush+checkpoint+fsync),"
                                + " restore+reopen %6.1f ms, clone+open %6.1f ms%n",
                        mib,
                        snap.fileCount(),
                        snap.sizeBytes() / 1048576.0,
                        (t1 - t0) / 1e6,
                        (t2 - t1) / 1e6,
                        (t3 - t2) / 1e6);
            }
        }
    }

    private static void load(ShardStore shard, long epoch, int mib) {
        Random random = new Random(mib);
        byte[] value = new byte[1000];
        long entries = (long) mib * 1024;
        List<WriteOp> ops = new ArrayList<>(1000);
        for (long k = 0; k < entries; k++) {
            random.nextBytes(value);
            ops.add(
                    WriteOp.newBuilder()
                            .setPut(
                                    Put.newBuilder()
                                            .setKey(
                                                    ByteString.copyFromUtf8(
                                                            String.format("%012d", k)))
                                            .setValue(ByteString.copyFrom(value)))
                            .build());
            if (ops.size() == 1000) {
                try (ShardStore.WriteSession w = shard.beginWrite(epoch)) {
                    w.apply(ops);
                }
                ops.clear();
            }
        }
        try (ShardStore.WriteSession w = shard.beginWrite(epoch)) {
            w.apply(ops);
        }
    }
}
