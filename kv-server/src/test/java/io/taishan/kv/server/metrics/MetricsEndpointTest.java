package io.taishan.kv.server.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.taishan.kv.client.AuthenticationException;
import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.TableExistsException;
import io.taishan.kv.client.TtlState;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.storage.StorageTestAccess;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The metrics endpoint of a real node, scraped over HTTP while a real client works against it:
 * every counter moves by exactly what the calls did, the gauges say what the node holds, and {@code
 * /health} and {@code /ready} follow the node's life.
 */
class MetricsEndpointTest {
    private static final String DURATION = "taishan_kv_rpc_duration_seconds";

    private static KvServerConfig.Builder metricsOn() {
        return KvServerConfig.builder()
                .metricsPort(0)
                .metricsSampleInterval(Duration.ZERO)
                .blockCacheBytes(16 << 20)
                .writeBufferBytes(8 << 20);
    }

    private static KvStore connect(EmbeddedKvServer server) {
        return KvStores.connect(
                KvClientConfig.forAddresses(server.address())
                        .requestTimeout(Duration.ofSeconds(30))
                        .build());
    }

    private static String url(EmbeddedKvServer server, String path) {
        return "http://127.0.0.1:" + server.metricsPort() + path;
    }

    private static PrometheusText scrape(EmbeddedKvServer server) throws Exception {
        return PrometheusText.scrape(url(server, "/metrics"));
    }

    /** Calls completed between two scrapes, as "Method CODE" to count; zero deltas left out. */
    private static Map<String, Long> callsBetween(PrometheusText before, PrometheusText after) {
        Map<String, Long> calls = new TreeMap<>();
        for (PrometheusText.Sample s : after.samples()) {
            if (s.name().equals(DURATION + "_count")) {
                String method = s.labels().get("method");
                String code = s.labels().get("code");
                long delta =
                        Math.round(
                                s.value()
                                        - before.value(
                                                DURATION + "_count",
                                                "method",
                                                method,
                                                "code",
                                                code));
                if (delta != 0) {
                    calls.put(method + " " + code, delta);
                }
            }
        }
        return calls;
    }

    private static double delta(
            PrometheusText before, PrometheusText after, String name, String... labels) {
        return after.value(name, labels) - before.value(name, labels);
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void countersMoveByExactlyWhatTheClientDid() throws Exception {
        try (EmbeddedKvServer server = EmbeddedKvServer.start(metricsOn().build());
                KvStore kv = connect(server)) {
            assertThat(server.metricsPort()).isPositive();

            PrometheusText start = scrape(server);
            kv.createTable("t", 2);
            PrometheusText created = scrape(server);
            assertThat(callsBetween(start, created))
                    .containsExactly(Map.entry("CreateTable OK", 1L));
            assertThat(created.value("taishan_kv_tables")).isEqualTo(1);

            ShardLease s0 = kv.openShard("t", 0);
            ShardLease s1 = kv.openShard("t", 1);
            kv.write(
                    new WriteBatch("t")
                            .put(s0, b("a"), b("1"))
                            .put(s0, b("b"), b("2"))
                            .put(s0, b("c"), b("3"))
                            .delete(s0, b("c"))
                            .append(s0, b("list"), b("x"))
                            .append(s0, b("list"), b("y"))
                            .put(s1, b("z"), b("26"))
                            .deleteRange(s1, b("m"), b("n")));
            assertThat(kv.get(s0, b("a"))).isEqualTo(b("1"));
            assertThat(kv.get(s0, b("c"))).isNull();
            assertThat(kv.get(s1, b("z"))).isEqualTo(b("26"));
            assertThat(kv.multiGet(s0, List.of(b("a"), b("b")))).hasSize(2);
            PrometheusText written = scrape(server);
            assertThat(callsBetween(created, written))
                    .containsExactlyInAnyOrderEntriesOf(
                            Map.of(
                                    "OpenShard OK", 2L,
                                    "Write OK", 1L,
                                    "Get OK", 3L,
                                    "MultiGet OK", 1L));
            assertThat(delta(created, written, "taishan_kv_write_shard_batches_total"))
                    .isEqualTo(2);
            assertThat(delta(created, written, "taishan_kv_write_ops_total", "op", "put"))
                    .isEqualTo(4);
            assertThat(delta(created, written, "taishan_kv_write_ops_total", "op", "delete"))
                    .isEqualTo(1);
            assertThat(delta(created, written, "taishan_kv_write_ops_total", "op", "append"))
                    .isEqualTo(2);
            assertThat(delta(created, written, "taishan_kv_write_ops_total", "op", "delete_range"))
                    .isEqualTo(1);
            assertThat(delta(created, written, "taishan_kv_write_ops_total", "op", "snapshot"))
                    .isZero();
            assertThat(written.value("taishan_kv_open_stores")).isEqualTo(1);
            assertThat(written.value("taishan_kv_rocksdb_memtable_bytes")).isPositive();
            assertThat(written.value("taishan_kv_rocksdb_estimated_entries")).isPositive();
            assertThat(written.value("taishan_kv_rocksdb_written_bytes_total")).isPositive();
            assertThat(written.value("taishan_kv_rocksdb_sampled_stores")).isEqualTo(1);
            assertThat(written.value("taishan_kv_rocksdb_block_cache_capacity_bytes"))
                    .isEqualTo(16 << 20);
            // Request and response bytes, per method.
            assertThat(
                            delta(
                                    created,
                                    written,
                                    "taishan_kv_rpc_received_bytes_total",
                                    "method",
                                    "Write"))
                    .isPositive();
            assertThat(delta(created, written, "taishan_kv_rpc_sent_bytes_total", "method", "Get"))
                    .isPositive();
            assertThat(delta(created, written, "taishan_kv_rpc_sent_bytes_total", "method", "Scan"))
                    .isZero();

            kv.snapshot(List.of(s0), 7, false);
            PrometheusText snapped = scrape(server);
            assertThat(callsBetween(written, snapped))
                    .containsExactly(Map.entry("Snapshot OK", 1L));
            assertThat(
                            delta(
                                    written,
                                    snapped,
                                    "taishan_kv_shard_snapshots_taken_total",
                                    "reused",
                                    "false"))
                    .isEqualTo(1);
            assertThat(snapped.value("taishan_kv_shard_snapshots")).isEqualTo(1);
            assertThat(snapped.value("taishan_kv_cuts")).isEqualTo(1);
            assertThat(snapped.value("taishan_kv_cut_bytes")).isPositive();
            assertThat(snapped.value("taishan_kv_data_dir_bytes"))
                    .isPositive()
                    .isLessThanOrEqualTo(
                            snapped.value("taishan_kv_live_data_bytes")
                                    + snapped.value("taishan_kv_cut_bytes")
                                    + (1 << 20));
            assertThat(snapped.value("taishan_kv_rocksdb_flush_written_bytes_total")).isPositive();

            // Errors: a stale lease (FENCED) and a table that exists, each once.
            ShardLease newer = kv.openShard("t", 0);
            assertThatThrownBy(() -> kv.get(s0, b("a"))).isInstanceOf(FencedException.class);
            assertThatThrownBy(() -> kv.createTable("t", 2))
                    .isInstanceOf(TableExistsException.class);
            // A read of the flushed shard goes to its SST through the block cache.
            assertThat(kv.get(newer, b("b"))).isEqualTo(b("2"));
            PrometheusText failed = scrape(server);
            assertThat(callsBetween(snapped, failed))
                    .containsExactlyInAnyOrderEntriesOf(
                            Map.of(
                                    "OpenShard OK", 1L,
                                    "Get FAILED_PRECONDITION", 1L,
                                    "CreateTable ALREADY_EXISTS", 1L,
                                    "Get OK", 1L));
            assertThat(
                            delta(
                                    snapped,
                                    failed,
                                    "taishan_kv_rpc_errors_total",
                                    "method",
                                    "Get",
                                    "error",
                                    "FENCED"))
                    .isEqualTo(1);
            assertThat(
                            delta(
                                    snapped,
                                    failed,
                                    "taishan_kv_rpc_errors_total",
                                    "method",
                                    "CreateTable",
                                    "error",
                                    "TABLE_EXISTS"))
                    .isEqualTo(1);
            assertThat(
                            failed.value("taishan_kv_rocksdb_block_cache_hits_total")
                                    + failed.value("taishan_kv_rocksdb_block_cache_misses_total"))
                    .isPositive();

            // Histograms hang together: every call is in the +Inf bucket, and took some time.
            double count = failed.value(DURATION + "_count", "method", "Get", "code", "OK");
            assertThat(count).isEqualTo(4);
            assertThat(
                            failed.value(
                                    DURATION + "_bucket",
                                    "method",
                                    "Get",
                                    "code",
                                    "OK",
                                    "le",
                                    "+Inf"))
                    .isEqualTo(count);
            assertThat(failed.value(DURATION + "_sum", "method", "Get", "code", "OK")).isPositive();
            assertThat(failed.types()).containsEntry(DURATION, "histogram");
            assertThat(failed.types()).containsEntry("taishan_kv_rpc_errors_total", "counter");
            assertThat(failed.types()).containsEntry("taishan_kv_open_stores", "gauge");

            // The JVM and the build.
            assertThat(failed.value("jvm_memory_used_bytes", "area", "heap")).isPositive();
            assertThat(failed.has("jvm_threads_current")).isTrue();
            assertThat(failed.value("taishan_kv_build_info")).isEqualTo(1);
            assertThat(failed.value("taishan_kv_filesystem_available_bytes")).isPositive();
        }
    }

    @Test
    void expiryCountersCountTheEntriesSweptOut() throws Exception {
        int state = 0x0abc0001;
        try (EmbeddedKvServer server =
                        EmbeddedKvServer.start(
                                metricsOn().ttlSweepInterval(Duration.ofMillis(50)).build());
                KvStore kv = connect(server)) {
            kv.createTable("t", 1);
            kv.ttl()
                    .orElseThrow()
                    .registerTtlStates(
                            "t", List.of(new TtlState(state, 1_000, TtlState.Layout.VALUE, 0)));
            ShardLease lease = kv.openShard("t", 0);
            WriteBatch batch = new WriteBatch("t");
            for (int i = 0; i < 3; i++) {
                batch.put(lease, ttlKey(state, "old" + i), ttlValue(100));
            }
            batch.put(lease, ttlKey(state, "fresh"), ttlValue(9_500));
            kv.write(batch);
            PrometheusText before = scrape(server);
            assertThat(before.value("taishan_kv_ttl_expired_entries_total")).isZero();

            kv.ttl().orElseThrow().reportTtlTime(List.of(lease), 5_000).get(10, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            PrometheusText after = scrape(server);
            while (after.value("taishan_kv_ttl_expired_entries_total") < 3) {
                assertThat(System.nanoTime())
                        .as("3 entries expired within 10 s")
                        .isLessThan(deadline);
                Thread.sleep(20);
                after = scrape(server);
            }
            // A whole sweep after the one that deleted them (which may still be running) finds
            // the fresh entry alone.
            double sweeps = after.value("taishan_kv_ttl_sweeps_total");
            while (scrape(server).value("taishan_kv_ttl_sweeps_total") < sweeps + 2) {
                assertThat(System.nanoTime()).as("another sweep within 10 s").isLessThan(deadline);
                Thread.sleep(20);
            }
            PrometheusText settled = scrape(server);
            assertThat(settled.value("taishan_kv_ttl_expired_entries_total")).isEqualTo(3);
            assertThat(settled.value("taishan_kv_ttl_swept_entries_total"))
                    .isGreaterThanOrEqualTo(5);
            assertThat(settled.value("taishan_kv_ttl_last_sweep_timestamp_seconds"))
                    .isCloseTo(System.currentTimeMillis() / 1e3, within(30.0));
            assertThat(kv.get(lease, ttlKey(state, "fresh"))).isNotNull();
        }
    }

    @Test
    void healthAndReadinessFollowTheNodesLife() throws Exception {
        EmbeddedKvServer server =
                EmbeddedKvServer.start(metricsOn().shutdownGrace(Duration.ofSeconds(20)).build());
        String health = url(server, "/health");
        String ready = url(server, "/ready");
        CompletableFuture<Void> closing = null;
        try (KvStore kv = connect(server)) {
            assertThat(get(health)).isEqualTo("200 {\"status\":\"SERVING\"}");
            assertThat(get(ready)).isEqualTo("200 {\"ready\":true,\"status\":\"SERVING\"}");
            assertThat(get(url(server, "/nope"))).startsWith("404");

            // Hold a call in the server, so that its shutdown waits for it: an OpenShard waits
            // for the table's lock while this thread holds it as a write does.
            kv.createTable("t", 1);
            kv.openShard("t", 0);
            try (AutoCloseable held =
                    StorageTestAccess.holdAsADataCall(server.storage().tableStore("t"))) {
                CompletableFuture<ShardLease> blocked =
                        CompletableFuture.supplyAsync(() -> kv.openShard("t", 0));
                awaitThreadWaitingIn("TableStore.openShards");
                closing = CompletableFuture.runAsync(server::close);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (get(health).startsWith("200")) {
                    assertThat(System.nanoTime()).as("503 within 10 s").isLessThan(deadline);
                    Thread.sleep(10);
                }
                assertThat(get(health)).isEqualTo("503 {\"status\":\"SHUTTING_DOWN\"}");
                assertThat(get(ready))
                        .isEqualTo("503 {\"ready\":false,\"status\":\"SHUTTING_DOWN\"}");
                // The call still running is why the node is not closed yet; metrics still serve.
                assertThat(blocked).isNotDone();
                assertThat(scrape(server).has("jvm_threads_current")).isTrue();
            }
            closing.get(30, TimeUnit.SECONDS);
            assertThatThrownBy(() -> get(health)).isInstanceOf(ConnectException.class);
        } finally {
            if (closing == null) {
                server.close();
            }
        }
    }

    @Test
    void callsRefusedByTheTokenCheckAreCountedToo(@TempDir Path dir) throws Exception {
        String admin = "admin-0123456789abcdef0123456789";
        Path tokens = dir.resolve("tokens");
        Files.writeString(tokens, admin + " * ops\n");
        try (EmbeddedKvServer server =
                EmbeddedKvServer.start(metricsOn().authTokenFile(tokens).build())) {
            PrometheusText before = scrape(server);
            assertThatThrownBy(
                            () ->
                                    KvStores.connect(
                                            KvClientConfig.forAddresses(server.address())
                                                    .token(admin + "x")
                                                    .build()))
                    .isInstanceOf(AuthenticationException.class);
            PrometheusText after = scrape(server);
            assertThat(callsBetween(before, after))
                    .containsExactly(Map.entry("ClusterInfo UNAUTHENTICATED", 1L));
            assertThat(
                            delta(
                                    before,
                                    after,
                                    "taishan_kv_rpc_errors_total",
                                    "method",
                                    "ClusterInfo",
                                    "error",
                                    "UNAUTHENTICATED"))
                    .isEqualTo(1);
            try (KvStore kv =
                    KvStores.connect(
                            KvClientConfig.forAddresses(server.address()).token(admin).build())) {
                kv.createTable("t", 1);
            }
            assertThat(callsBetween(after, scrape(server))).containsEntry("CreateTable OK", 1L);
        }
    }

    @Test
    void aCallTheClientGaveUpOnCountsOnceAsCancelled() throws Exception {
        try (EmbeddedKvServer server = EmbeddedKvServer.start(metricsOn().build());
                KvStore kv = connect(server);
                KvStore impatient =
                        KvStores.connect(
                                KvClientConfig.forAddresses(server.address())
                                        .requestTimeout(Duration.ofMillis(300))
                                        .build())) {
            kv.createTable("t", 1);
            ShardLease lease = kv.openShard("t", 0);
            var shard = server.storage().tableStore("t").shard(0);
            PrometheusText before = scrape(server);
            try (AutoCloseable held =
                    StorageTestAccess.holdAsADataCall(server.storage().tableStore("t"))) {
                // Waits for the shard's lock in the server until the client's deadline.
                assertThatThrownBy(() -> impatient.openShard("t", 0))
                        .isInstanceOf(KvException.class);
            }
            // Now the service finishes the call and closes it: that close is not counted again.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (shard.epoch() == lease.epoch()) {
                assertThat(System.nanoTime()).as("the call ends within 10 s").isLessThan(deadline);
                Thread.sleep(10);
            }
            PrometheusText after = scrape(server);
            assertThat(callsBetween(before, after))
                    .containsExactly(Map.entry("OpenShard CANCELLED", 1L));
            assertThat(
                            delta(
                                    before,
                                    after,
                                    "taishan_kv_rpc_errors_total",
                                    "method",
                                    "OpenShard",
                                    "error",
                                    "none"))
                    .isEqualTo(1);
        }
    }

    @Test
    void metricsAreOffByDefault() {
        try (EmbeddedKvServer server = EmbeddedKvServer.start()) {
            assertThat(server.metricsPort()).isEqualTo(-1);
            assertThat(server.server().metricsUrl()).isNull();
        }
    }

    @Test
    void aTakenMetricsPortFailsTheStartWithOneLine() {
        try (EmbeddedKvServer first = EmbeddedKvServer.start(metricsOn().build())) {
            assertThatThrownBy(
                            () ->
                                    EmbeddedKvServer.start(
                                            metricsOn().metricsPort(first.metricsPort()).build()))
                    .hasMessage(
                            "cannot listen on metrics port 127.0.0.1:"
                                    + first.metricsPort()
                                    + ": address already in use or not available");
        }
    }

    /** "CODE body" of a GET, the body's trailing newline cut. */
    private static String get(String url) throws IOException, InterruptedException {
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        HttpResponse<String> r =
                client.send(
                        HttpRequest.newBuilder(URI.create(url))
                                .timeout(Duration.ofSeconds(10))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        return r.statusCode() + " " + r.body().strip();
    }

    private static void awaitThreadWaitingIn(String frame) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            for (Map.Entry<Thread, StackTraceElement[]> t : Thread.getAllStackTraces().entrySet()) {
                if (t.getKey().getState() == Thread.State.WAITING) {
                    for (StackTraceElement e : t.getValue()) {
                        if ((e.getClassName() + "." + e.getMethodName()).endsWith(frame)) {
                            return;
                        }
                    }
                }
            }
            assertThat(System.nanoTime())
                    .as("a thread waits in " + frame + " within 10 s")
                    .isLessThan(deadline);
            Thread.sleep(10);
        }
    }

    private static byte[] ttlKey(int state, String name) {
        byte[] suffix = name.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(4 + suffix.length).putInt(state).put(suffix).array();
    }

    private static byte[] ttlValue(long timestamp) {
        return ByteBuffer.allocate(12).putLong(timestamp).putInt(1).array();
    }
}
