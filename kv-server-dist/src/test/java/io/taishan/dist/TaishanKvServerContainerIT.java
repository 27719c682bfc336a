package io.taishan.dist;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.NodeHealth;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import io.taishan.testkit.TaishanKvServerContainer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * The distribution's Dockerfile, built by Testcontainers from the unpacked archive, run through
 * {@link TaishanKvServerContainer}: a client at {@code getAddress()} writes and reads, the admin's
 * health (the image's HEALTHCHECK command) answers inside it, and the server runs as the image's
 * non-root user.
 *
 * <p>Skipped when no Docker engine answers (as on the machines this repository is built on, where
 * it has never run); {@code disabledWithoutDocker} makes that a skip, not a failure or a hang.
 */
@Testcontainers(disabledWithoutDocker = true)
class TaishanKvServerContainerIT {
    @TempDir Path temp;

    @Test
    void theImageServesAClientAndAnswersItsHealthCheck() throws Exception {
        UnpackedDistribution dist = UnpackedDistribution.unpack(temp);
        try (TaishanKvServerContainer kv = TaishanKvServerContainer.fromDistribution(dist.home())) {
            kv.start();

            try (KvStore store =
                    KvStores.connect(
                            KvClientConfig.forAddresses(kv.getAddress())
                                    .requestTimeout(Duration.ofSeconds(10))
                                    .build())) {
                store.createTable("container_check", 1);
                ShardLease lease = store.openShard("container_check", 0);
                byte[] key = "k".getBytes(StandardCharsets.UTF_8);
                byte[] value = "in a container".getBytes(StandardCharsets.UTF_8);
                store.write(new WriteBatch("container_check").put(lease, key, value));
                assertThat(store.get(lease, key)).isEqualTo(value);
                assertThat(store.health()).extracting(NodeHealth::status).containsOnly("SERVING");
            }

            ExecResult health =
                    kv.execInContainer(
                            "/opt/taishan-kv-server/bin/taishan-kv-admin",
                            "--address",
                            "127.0.0.1:" + TaishanKvServerContainer.KV_PORT,
                            "health");
            assertThat(health.getExitCode()).as(health.getStderr()).isZero();
            assertThat(health.getStdout()).contains("SERVING");

            // The server runs as the image's non-root user.
            ExecResult user = kv.execInContainer("id", "-un");
            assertThat(user.getStdout().strip()).isEqualTo("taishan");
        }
    }
}
