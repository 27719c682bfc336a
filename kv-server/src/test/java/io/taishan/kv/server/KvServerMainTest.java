package io.taishan.kv.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.server.security.SecurityOptions;
import io.taishan.kv.server.storage.FilterOptions;
import io.taishan.kv.server.storage.WalMode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line's failure paths, in-process; the happy path runs as a child JVM elsewhere. */
class KvServerMainTest {
    @TempDir Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return KvServerMain.run(
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void portTakenFailsWithOneClearLine() {
        try (EmbeddedKvServer other = EmbeddedKvServer.start()) {
            int code =
                    run(
                            "--port",
                            Integer.toString(other.port()),
                            "--data-dir",
                            dir.resolve("d").toString());
            assertThat(code).isEqualTo(KvServerMain.EXIT_FAILED_START);
            assertThat(err().lines())
                    .containsExactly(
                            "taishan-kv-server: cannot start: cannot listen on 127.0.0.1:"
                                    + other.port()
                                    + ": address already in use or not available");
            assertThat(out.toString(StandardCharsets.UTF_8)).isEmpty();
            // The data dir was released again.
            EmbeddedKvServer.start(KvServerConfig.builder().dataDir(dir.resolve("d")).build())
                    .close();
        }
    }

    @Test
    void unusableDataDirFailsWithOneClearLine() throws IOException {
        Path file = Files.createFile(dir.resolve("plain-file"));
        int code = run("--port", "0", "--data-dir", file.resolve("data").toString());
        assertThat(code).isEqualTo(KvServerMain.EXIT_FAILED_START);
        assertThat(err().lines()).hasSize(1);
        assertThat(err())
                .startsWith("taishan-kv-server: cannot start: data dir " + file.resolve("data"))
                .contains("cannot be created");
    }

    @Test
    void badArgumentsAndConfigFailWithUsage() throws IOException {
        assertThat(run("--port", "0")).isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err()).contains("--data-dir is required").contains("usage:");
        err.reset();
        assertThat(run("--data-dir", "x")).isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err()).contains("--port is required");
        err.reset();
        assertThat(run("--port", "70000", "--data-dir", "x")).isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err()).contains("bad --port '70000'");
        err.reset();
        assertThat(run("--bogus")).isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err()).contains("unknown argument '--bogus'");
        err.reset();
        Path conf = dir.resolve("bad.properties");
        Files.writeString(conf, "limits.max-key-bytes = lots\n");
        assertThat(run("--port", "0", "--data-dir", "x", "--config", conf.toString()))
                .isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err())
                .isEqualTo(
                        "taishan-kv-server: bad config: bad size for 'limits.max-key-bytes':"
                                + " 'lots' (expected e.g. 65536, 64k, 256m, 1g)"
                                + System.lineSeparator());
        err.reset();
        Files.writeString(conf, "shard.idle = 5m\n");
        assertThat(run("--port", "0", "--data-dir", "x", "--config", conf.toString()))
                .isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err()).contains("unknown config key 'shard.idle'");
        err.reset();
        assertThat(
                        run(
                                "--port",
                                "0",
                                "--data-dir",
                                "x",
                                "--config",
                                dir.resolve("nope").toString()))
                .isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err()).contains("cannot read config file");
        err.reset();
        Files.writeString(conf, "cluster.nodes = a=h:1,b=h:2\ncluster.node-name = c\n");
        assertThat(run("--port", "0", "--data-dir", "x", "--config", conf.toString()))
                .isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err()).contains("cluster.node-name 'c' is not in cluster.nodes (a, b)");
        err.reset();
        // A config of the positional list: told what to write instead, in one line.
        Files.writeString(conf, "cluster.nodes = h:1,h:2\ncluster.node-index = 1\n");
        assertThat(run("--port", "0", "--data-dir", "x", "--config", conf.toString()))
                .isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err())
                .contains(
                        "config key 'cluster.node-index' is now 'cluster.node-name': nodes are"
                                + " named in cluster.nodes (name=host:port,...)");
        assertThat(err().lines().filter(l -> l.startsWith("taishan-kv-server:"))).hasSize(1);
    }

    @Test
    void configFileSetsEveryKeyAndTheCommandLineWins() throws IOException {
        Path conf = dir.resolve("server.properties");
        Files.writeString(
                conf,
                String.join(
                        "\n",
                        "host = 0.0.0.0",
                        "port = 7000",
                        "data.dir = /from/file",
                        "cluster.nodes = kv1=h1:7000, kv2=h2:7000,kv3=h3:7000",
                        "cluster.node-name = kv3",
                        "wal.enabled = true",
                        "wal.sync = true",
                        "limits.max-key-bytes = 1k",
                        "limits.max-value-bytes = 2m",
                        "limits.max-inline-value-bytes = 256k",
                        "large-values.memory-bytes = 1g",
                        "limits.max-request-bytes = 64MB",
                        "limits.max-ops-per-request = 5000",
                        "limits.max-scan-page-entries = 500",
                        "limits.max-scan-page-bytes = 512k",
                        "rocksdb.block-cache-bytes = 1g",
                        "rocksdb.write-buffer-bytes = 256m",
                        "rocksdb.store-write-buffer-bytes = 2m",
                        "rocksdb.background-threads = 4",
                        "rocksdb.max-open-files-per-store = -1",
                        "stores.idle-close = 30s",
                        "stores.max-open = 500",
                        "shutdown.grace = 2s",
                        "ttl.sweep-interval = 15s",
                        "ttl.sweep-bytes-per-second = 8m",
                        "filter.target-fpp = 0.001",
                        "filter.max-shard-bytes = 16m",
                        "filter.max-memory-bytes = 128m",
                        "filter.rebuild-threads = 2",
                        "filter.rebuild-bytes-per-second = 32m",
                        "filter.max-concurrent-fetches = 3",
                        "tls.cert-file = /etc/taishan/node.pem",
                        "tls.key-file = /etc/taishan/node.key",
                        "tls.client-ca-file = /etc/taishan/clients-ca.pem",
                        "auth.token-file = /etc/taishan/tokens",
                        "auth.reload-interval = 30s",
                        "metrics.port = 9000",
                        "metrics.sample-interval = 5s",
                        ""));
        KvServerConfig c =
                KvServerMain.parse(
                        new String[] {"--config", conf.toString(), "--data-dir", "/from/cli"});
        assertThat(c.metricsPort()).isEqualTo(9000);
        assertThat(c.metricsSampleInterval()).isEqualTo(Duration.ofSeconds(5));
        assertThat(
                        KvServerMain.parse(
                                        new String[] {
                                            "--config", conf.toString(), "--metrics-port", "0"
                                        })
                                .metricsPort())
                .isZero();
        assertThat(c.host()).isEqualTo("0.0.0.0");
        assertThat(c.port()).isEqualTo(7000);
        assertThat(c.dataDir()).isEqualTo(Path.of("/from/cli"));
        assertThat(c.clusterNodes())
                .containsExactly(
                        new ClusterNode("kv1", "h1:7000"),
                        new ClusterNode("kv2", "h2:7000"),
                        new ClusterNode("kv3", "h3:7000"));
        assertThat(c.nodeName()).isEqualTo("kv3");
        assertThat(c.walEnabled()).isTrue();
        assertThat(c.walMode()).isEqualTo(WalMode.SYNC);
        assertThat(c.limits())
                .isEqualTo(new KvLimits(1024, 2 << 20, 64 << 20, 5000, 500, 512 << 10, 256 << 10));
        assertThat(c.largeValueMemoryBytes()).isEqualTo(1L << 30);
        var storage = c.storageOptions(Path.of("/d"));
        assertThat(storage.blockCacheBytes()).isEqualTo(1L << 30);
        assertThat(storage.writeBufferBytes()).isEqualTo(256L << 20);
        assertThat(storage.storeWriteBufferBytes()).isEqualTo(2L << 20);
        assertThat(storage.backgroundThreads()).isEqualTo(4);
        assertThat(storage.maxOpenFilesPerStore()).isEqualTo(-1);
        assertThat(storage.storeIdleClose()).isEqualTo(Duration.ofSeconds(30));
        assertThat(storage.maxOpenStores()).isEqualTo(500);
        assertThat(c.shutdownGrace()).isEqualTo(Duration.ofSeconds(2));
        assertThat(c.ttlSweepInterval()).isEqualTo(Duration.ofSeconds(15));
        assertThat(c.ttlSweepBytesPerSecond()).isEqualTo(8L << 20);
        assertThat(c.filters())
                .isEqualTo(new FilterOptions(0.001, 16L << 20, 128L << 20, 2, 32L << 20, 3));
        assertThat(c.security())
                .isEqualTo(
                        new SecurityOptions(
                                Path.of("/etc/taishan/node.pem"),
                                Path.of("/etc/taishan/node.key"),
                                Path.of("/etc/taishan/clients-ca.pem"),
                                Path.of("/etc/taishan/tokens"),
                                Duration.ofSeconds(30)));
        assertThat(KvServerMain.parse(new String[] {"--help"})).isNull();
    }

    @Test
    void securityFlagsOverrideTheConfigFile() throws IOException {
        Path conf = dir.resolve("server.properties");
        Files.writeString(
                conf,
                "port = 1\ntls.cert-file = /file/c.pem\ntls.key-file = /file/k.pem\n"
                        + "auth.token-file = /file/tokens\n");
        KvServerConfig c =
                KvServerMain.parse(
                        new String[] {
                            "--config", conf.toString(),
                            "--data-dir", "/d",
                            "--tls-cert-file", "/cli/c.pem",
                            "--tls-key-file", "/cli/k.pem",
                            "--tls-client-ca-file", "/cli/ca.pem",
                            "--auth-token-file", "/cli/tokens"
                        });
        assertThat(c.security())
                .isEqualTo(
                        new SecurityOptions(
                                Path.of("/cli/c.pem"),
                                Path.of("/cli/k.pem"),
                                Path.of("/cli/ca.pem"),
                                Path.of("/cli/tokens"),
                                SecurityOptions.DEFAULT_RELOAD_INTERVAL));
        assertThat(KvServerConfig.builder().build().security()).isEqualTo(SecurityOptions.NONE);
        assertThat(
                        run(
                                "--port",
                                "0",
                                "--data-dir",
                                dir.resolve("d").toString(),
                                "--tls-cert-file",
                                "/no/such.pem"))
                .isEqualTo(KvServerMain.EXIT_USAGE);
        assertThat(err())
                .startsWith(
                        "taishan-kv-server: bad config: tls.cert-file and tls.key-file must be set"
                                + " together");
    }

    @Test
    void aMissingPemFileFailsTheStartWithOneLine() {
        int code =
                run(
                        "--port",
                        "0",
                        "--data-dir",
                        dir.resolve("d").toString(),
                        "--tls-cert-file",
                        "/no/such.pem",
                        "--tls-key-file",
                        "/no/such.key");
        assertThat(code).isEqualTo(KvServerMain.EXIT_FAILED_START);
        assertThat(err().lines())
                .singleElement()
                .asString()
                .startsWith(
                        "taishan-kv-server: cannot start: tls.cert-file /no/such.pem cannot be"
                                + " read: java.nio.file.NoSuchFileException");
    }

    @Test
    void badFilterSettingsNameTheirKey() {
        assertThatThrownBy(
                        () ->
                                KvServerConfig.builder()
                                        .properties(props("filter.target-fpp", "0.9"))
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("filter.target-fpp");
        assertThatThrownBy(
                        () ->
                                KvServerConfig.builder()
                                        .properties(props("filter.rebuild-threads", "0"))
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("filter.rebuild-threads must be in 1..8, not 0");
        assertThatThrownBy(
                        () ->
                                KvServerConfig.builder()
                                        .properties(props("filter.max-memory-bytes", "lots"))
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'filter.max-memory-bytes'");
        assertThat(
                        KvServerConfig.builder()
                                .properties(props("filter.rebuild-bytes-per-second", "0"))
                                .build()
                                .filters()
                                .rebuildBytesPerSecond())
                .isZero();
    }

    private static java.util.Properties props(String key, String value) {
        java.util.Properties p = new java.util.Properties();
        p.setProperty(key, value);
        return p;
    }

    @Test
    void limitsThatContradictEachOtherAreRejected() {
        assertThatThrownBy(() -> KvServerConfig.builder().maxRequestBytes(1).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limits.max-request-bytes must be at least");
        assertThatThrownBy(
                        () ->
                                KvServerConfig.builder()
                                        .maxInlineValueBytes(40 << 20)
                                        .maxValueBytes(64 << 20)
                                        .maxRequestBytes(32 << 20)
                                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must fit in limits.max-request-bytes");
    }

    @Test
    void aSyncedWalNeedsTheWal() {
        assertThatThrownBy(() -> KvServerConfig.builder().walSync(true).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("wal.sync = true needs wal.enabled = true");
    }

    @Test
    void embeddedServerReportsAPortClashAsAStartupFailure() {
        try (EmbeddedKvServer first = EmbeddedKvServer.start()) {
            assertThatThrownBy(
                            () ->
                                    EmbeddedKvServer.start(
                                            KvServerConfig.builder().port(first.port()).build()))
                    .isInstanceOf(KvServerStartupException.class)
                    .hasMessage(
                            "cannot listen on 127.0.0.1:"
                                    + first.port()
                                    + ": address already in use or not available");
        }
    }
}
