package io.taishan.kv.server.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.KvServerStartupException;
import io.taishan.kv.server.durable.CutFile;
import io.taishan.kv.server.durable.CutTransfers;
import io.taishan.kv.server.durable.DownloadRequest;
import io.taishan.kv.server.durable.RemoteFile;
import io.taishan.kv.server.durable.UploadRequest;
import io.taishan.kv.server.durable.UploadResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node started from config keys with {@code durable.enabled}: its transfers are there and counted
 * on {@code /metrics}, as they are by default; off, there are none and no such metric; a bad {@code
 * durable.*} setting stops the start with one line before the data dir is taken.
 */
class DurableTransferMetricsTest {
    private static final String FILES = "taishan_kv_durable_transferred_files_total";
    private static final String BYTES = "taishan_kv_durable_transferred_bytes_total";
    private static final String FAILED = "taishan_kv_durable_failed_transfers_total";

    @TempDir Path tmp;

    @Test
    void onByDefaultAndOffWhenSaid() throws Exception {
        try (EmbeddedKvServer server =
                EmbeddedKvServer.start(KvServerConfig.builder().metricsPort(0).build())) {
            assertThat(server.server().durableTransfers()).isPresent();
            assertThat(scrape(server).sampleNames()).contains(FILES);
        }
        try (EmbeddedKvServer server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .properties(
                                        properties("durable.enabled", "false", "metrics.port", "0"))
                                .build())) {
            assertThat(server.server().durableTransfers()).isEmpty();
            assertThat(scrape(server).sampleNames())
                    .noneMatch(n -> n.startsWith("taishan_kv_durable_"));
        }
    }

    @Test
    void aNodeWithDurableOnCountsItsTransfers() throws Exception {
        Properties keys = new Properties();
        keys.setProperty("durable.enabled", "true");
        keys.setProperty("durable.transfer-threads", "2");
        keys.setProperty("metrics.port", "0");
        try (EmbeddedKvServer server =
                EmbeddedKvServer.start(KvServerConfig.builder().properties(keys).build())) {
            CutTransfers transfers = server.server().durableTransfers().orElseThrow();
            Path cut = Files.createDirectories(tmp.resolve("cut"));
            Files.write(cut.resolve("000007.sst"), new byte[10_000]);
            Files.write(cut.resolve("CURRENT"), new byte[16]);
            UploadResult up =
                    transfers
                            .upload(
                                    UploadRequest.of(
                                            "s",
                                            cut,
                                            List.of("000007.sst", "CURRENT"),
                                            tmp.resolve("shared").toUri().toString()))
                            .await();
            RemoteFile missing = new RemoteFile(tmp.resolve("nothing").toUri().toString(), 1, 0);
            assertThatThrownBy(
                            () ->
                                    transfers
                                            .download(
                                                    new DownloadRequest(
                                                            List.of(new CutFile("x.sst", missing)),
                                                            null,
                                                            tmp.resolve("restored")))
                                            .result()
                                            .get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class);

            PrometheusText metrics = scrape(server);
            assertThat(metrics.value(FILES, "direction", "upload")).isEqualTo(2);
            assertThat(metrics.value(BYTES, "direction", "upload")).isEqualTo(up.uploadedBytes());
            assertThat(metrics.value(FILES, "direction", "download")).isZero();
            assertThat(metrics.value(FAILED, "direction", "upload")).isZero();
            assertThat(metrics.value(FAILED, "direction", "download")).isEqualTo(1);
            assertThat(metrics.has("taishan_kv_durable_reused_files_total")).isTrue();
            assertThat(metrics.has("taishan_kv_durable_retries_total")).isTrue();
        }
    }

    @Test
    void aBadDurableSettingStopsTheStartBeforeTheDataDirIsTaken() {
        Path dataDir = tmp.resolve("data");
        Path nowhere = tmp.resolve("no-plugins");
        KvServerConfig bad =
                KvServerConfig.builder()
                        .dataDir(dataDir)
                        .properties(
                                properties(
                                        "durable.enabled",
                                        "true",
                                        "durable.plugins-dir",
                                        nowhere.toString()))
                        .build();

        assertThatThrownBy(() -> EmbeddedKvServer.start(bad))
                .isInstanceOf(KvServerStartupException.class)
                .hasMessage("durable.plugins-dir " + nowhere + " is not a directory");
        try (EmbeddedKvServer server =
                EmbeddedKvServer.start(KvServerConfig.builder().dataDir(dataDir).build())) {
            assertThat(server.server().durableTransfers()).isPresent();
        }
    }

    private static Properties properties(String... keyThenValue) {
        Properties p = new Properties();
        for (int i = 0; i < keyThenValue.length; i += 2) {
            p.setProperty(keyThenValue[i], keyThenValue[i + 1]);
        }
        return p;
    }

    private static PrometheusText scrape(EmbeddedKvServer server) throws Exception {
        return PrometheusText.scrape("http://127.0.0.1:" + server.metricsPort() + "/metrics");
    }
}
