package io.taishan.kv.server.metrics;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Not a test: what a scrape costs with many open shards. Opens N shards with one write and one
 * snapshot each, then scrapes a few times and prints the node's own figures for the RocksDB sample
 * and the data dir walk, and the scrape's wall time.
 *
 * <pre>
 * java -Xmx1g -cp $CP io.taishan.kv.server.metrics.MetricsSampleCostProbe DIR [shards]
 * </pre>
 */
public final class MetricsSampleCostProbe {
    private MetricsSampleCostProbe() {}

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int shards = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
        try (EmbeddedKvServer server =
                        EmbeddedKvServer.start(
                                KvServerConfig.builder()
                                        .dataDir(dir)
                                        .metricsPort(0)
                                        .metricsSampleInterval(Duration.ZERO)
                                        .maxOpenStores(shards + 16)
                                        .build());
                KvStore kv =
                        KvStores.connect(
                                KvClientConfig.forAddresses(server.address())
                                        .requestTimeout(Duration.ofMinutes(2))
                                        .build())) {
            kv.createTable("probe", shards);
            byte[] value = new byte[100];
            for (int s = 0; s < shards; s++) {
                ShardLease lease = kv.openShard("probe", s);
                kv.write(
                        new WriteBatch("probe")
                                .put(lease, ("k" + s).getBytes(StandardCharsets.UTF_8), value)
                                .snapshotMarker(lease, 1, false));
            }
            String url = "http://127.0.0.1:" + server.metricsPort() + "/metrics";
            for (int i = 0; i < 5; i++) {
                long t0 = System.nanoTime();
                PrometheusText p = PrometheusText.scrape(url);
                long t1 = System.nanoTime();
                System.out.printf(
                        "open shards %.0f, sampled %.0f, busy %.0f: RocksDB sample %.1f ms, data dir"
                                + " walk %.1f ms (%.0f files, %.0f snapshots), scrape %.1f ms%n",
                        p.value("taishan_kv_open_stores"),
                        p.value("taishan_kv_rocksdb_sampled_stores"),
                        p.value("taishan_kv_rocksdb_busy_tables"),
                        p.value("taishan_kv_rocksdb_sample_duration_seconds") * 1e3,
                        p.value("taishan_kv_disk_sample_duration_seconds") * 1e3,
                        p.value("taishan_kv_data_dir_files"),
                        p.value("taishan_kv_shard_snapshots"),
                        (t1 - t0) / 1e6);
            }
        }
    }
}
