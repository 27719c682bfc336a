package io.taishan.benchmarks.kv;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardFilter;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.protocol.ScanRange;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/**
 * One pass over every call a keyed backend makes, on a throwaway table, dropped afterwards: what
 * makes a fresh kv-server child JVM answer as a long-running one does. A production kv-server
 * serves many jobs for weeks, so its class loading, lazy initialisation and first compilations
 * happened long before an operator opens; in a child JVM started for one measurement they would
 * land on the first operator's open (about 200 ms here) and be billed to it.
 */
public final class KvServerWarmUp {
    private static final String TABLE = "kv-server-warm-up";
    private static final int SHARDS = 128;
    private static final int ROUNDS = 3;

    private KvServerWarmUp() {}

    /** Runs the pass against the server at {@code address}; the table is gone afterwards. */
    public static void run(String address) {
        try (KvStore store = KvStores.connect(KvClientConfig.forAddresses(address).build())) {
            store.describeTable(TABLE);
            store.createTableIfAbsent(TABLE, SHARDS);
            int[] shards = IntStream.range(0, SHARDS).toArray();
            List<ShardLease> leases = store.openShards(TABLE, shards, TABLE + "/writer", true);
            for (int round = 1; round <= ROUNDS; round++) {
                WriteBatch batch = new WriteBatch(TABLE);
                for (ShardLease lease : leases) {
                    batch.put(lease, key(lease.shard()), key(round));
                    batch.append(lease, key(-lease.shard()), key(round));
                }
                for (ShardLease lease : leases) {
                    batch.snapshotMarker(lease, round, false);
                }
                store.write(batch);
            }
            List<ShardRestore> restores = new ArrayList<>();
            for (int shard : shards) {
                restores.add(new ShardRestore(shard, TABLE, ROUNDS - 1));
            }
            List<ShardLease> restored = store.restoreShards(TABLE, TABLE + "/restored", restores);
            read(store, restored);
            store.dropSnapshot(TABLE, shards, ROUNDS - 1);
            store.dropTable(TABLE);
        }
    }

    private static void read(KvStore store, List<ShardLease> leases) {
        List<KvStore.PageQuery> pages = new ArrayList<>();
        for (ShardLease lease : leases) {
            store.get(lease, key(lease.shard()));
            store.multiGet(lease, List.of(key(lease.shard()), key(-lease.shard())));
            pages.add(new KvStore.PageQuery(lease, ScanRange.all(), 10, false));
        }
        store.firstPages(pages);
        try (CloseableIterator<KvEntry> scan =
                store.scan(leases.get(0), ScanRange.all(), 0, false)) {
            scan.forEachRemaining(entry -> {});
        }
        store.filters()
                .ifPresent(
                        filters -> {
                            try (ShardFilter filter = filters.fetchFilter(leases.get(0))) {
                                // fetched: its stream's path is warm
                            } catch (RuntimeException filterNotReadyYet) {
                                // a filter still building is fine: the path ran all the same
                            }
                        });
    }

    private static byte[] key(int i) {
        return ("warm-up-" + i).getBytes(StandardCharsets.UTF_8);
    }
}
