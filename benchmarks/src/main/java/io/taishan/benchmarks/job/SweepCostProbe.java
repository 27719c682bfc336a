package io.taishan.benchmarks.job;

import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.TtlState;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.storage.ExpirySweeper;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.flink.util.FileUtils;

/**
 * What one expiry sweep costs the kv-server, measured on the thread that runs it: a node in this
 * JVM (its own sweeper idle: {@code ttl.sweep-interval} 1 h), one table of 128 shards holding
 * {@code --entries} entries of one TTL'd value state laid out as Flink's TTL value (8-byte
 * last-access timestamp first) with the SQL run's entry size (14-byte key, 48-byte value: 62 bytes,
 * the size the GROUP BY benchmark's sampler measured), flushed to disk; then {@link
 * ExpirySweeper#sweepOnce} twice on this thread, unthrottled: once with no entry expired (the pass
 * every interval makes over live state) and once with every entry expired (a point read and a
 * delete each). CPU is this thread's; RocksDB's compactions of the tombstones run on its own
 * threads and are reported as the process's CPU beside it.
 */
public final class SweepCostProbe {
    private static final String TABLE = "sweep_probe";
    private static final int SHARDS = 128;
    private static final int STATE_ID = 0x1234_5678;
    private static final long TTL_MILLIS = 60_000;
    private static final int VALUE_BYTES = 48;

    private SweepCostProbe() {}

    public static void main(String[] args) throws Exception {
        long entries = args.length > 0 ? Long.parseLong(args[0]) : 1_000_000;
        Path out = Path.of(args.length > 1 ? args[1] : "sweep-probe.json");
        Path dir = Files.createTempDirectory("taishan-sweep-probe");
        JsonObject result = new JsonObject();
        result.addProperty("entries", entries);
        result.addProperty("loadAverageStart", Machine.loadAverage());
        try (EmbeddedKvServer server =
                        EmbeddedKvServer.start(
                                KvServerConfig.builder()
                                        .dataDir(dir)
                                        .ttlSweepInterval(Duration.ofHours(1))
                                        .build());
                KvStore kv =
                        KvStores.connect(KvClientConfig.forAddresses(server.address()).build())) {
            kv.createTable(TABLE, SHARDS);
            List<ShardLease> leases = new ArrayList<>();
            for (int s = 0; s < SHARDS; s++) {
                leases.add(kv.openShard(TABLE, s));
            }
            long written = System.currentTimeMillis();
            long bytes = load(kv, leases, entries, written);
            kv.ttl()
                    .orElseThrow()
                    .registerTtlStates(
                            TABLE,
                            List.of(new TtlState(STATE_ID, TTL_MILLIS, TtlState.Layout.VALUE, 0)));
            // Reopening flushes each shard's memtable: the sweeps read SST files, as a large store.
            server.storage().closeAllIdleStores();
            leases.clear();
            for (int s = 0; s < SHARDS; s++) {
                leases.add(kv.openShard(TABLE, s));
            }
            result.addProperty("bytes", bytes);
            ExpirySweeper sweeper = new ExpirySweeper(server.storage(), Duration.ofHours(1), 0);
            JsonArray passes = new JsonArray();
            kv.ttl().orElseThrow().reportTtlTime(leases, written).get();
            passes.add(pass("no entry expired", sweeper));
            passes.add(pass("no entry expired (again, warm)", sweeper));
            kv.ttl().orElseThrow().reportTtlTime(leases, written + TTL_MILLIS + 1).get();
            passes.add(pass("every entry expired", sweeper));
            passes.add(pass("after the deletes (tombstones)", sweeper));
            result.add("passes", passes);
        } finally {
            FileUtils.deleteDirectoryQuietly(dir.toFile());
        }
        result.addProperty("loadAverageEnd", Machine.loadAverage());
        String json = new GsonBuilder().setPrettyPrinting().create().toJson(result);
        Files.writeString(out, json);
        System.out.println(json);
        System.exit(0);
    }

    private static long load(KvStore kv, List<ShardLease> leases, long entries, long ts) {
        SplittableRandom random = new SplittableRandom(8);
        long bytes = 0;
        WriteBatch batch = new WriteBatch(TABLE);
        for (long i = 0; i < entries; i++) {
            int shard = (int) Math.floorMod(i * 31, SHARDS);
            byte[] key =
                    ByteBuffer.allocate(14)
                            .putInt(STATE_ID)
                            .put((byte) shard)
                            .putLong(i)
                            .put((byte) 0)
                            .array();
            byte[] value = new byte[VALUE_BYTES];
            random.nextBytes(value);
            ByteBuffer.wrap(value).putLong(ts);
            batch.put(leases.get(shard), key, value);
            bytes += key.length + value.length;
            if (batch.opCount() == 2000) {
                kv.write(batch);
                batch = new WriteBatch(TABLE);
            }
        }
        if (!batch.isEmpty()) {
            kv.write(batch);
        }
        return bytes;
    }

    private static JsonObject pass(String name, ExpirySweeper sweeper) throws Exception {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long cpu = threads.getCurrentThreadCpuTime();
        long processCpu = Machine.processCpuNanos();
        long start = System.nanoTime();
        long deleted = sweeper.sweepOnce();
        JsonObject json = new JsonObject();
        json.addProperty("pass", name);
        json.addProperty("deleted", deleted);
        json.addProperty("wallSeconds", (System.nanoTime() - start) / 1e9);
        json.addProperty("threadCpuSeconds", (threads.getCurrentThreadCpuTime() - cpu) / 1e9);
        json.addProperty("processCpuSeconds", (Machine.processCpuNanos() - processCpu) / 1e9);
        json.addProperty("loadAverage", Machine.loadAverage());
        System.err.println(json);
        return json;
    }
}
