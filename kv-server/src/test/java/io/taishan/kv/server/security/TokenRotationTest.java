package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.AuthenticationException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvException;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tokens rotated in the file while the node runs: a revoked token is refused on a connection that
 * was open before, a new one is accepted, and a broken edit changes nothing.
 */
class TokenRotationTest {
    private static final String OLD = "old-token-0123456789abcdef";
    private static final String NEW = "new-token-0123456789abcdef";

    @TempDir Path dir;

    @Test
    void aRevokedTokenIsRefusedOnAnOpenConnection() throws Exception {
        Path tokens = Files.writeString(dir.resolve("tokens"), OLD + " t_ jobs\n");
        try (EmbeddedKvServer server =
                        EmbeddedKvServer.start(
                                KvServerConfig.builder()
                                        .blockCacheBytes(8 << 20)
                                        .writeBufferBytes(8 << 20)
                                        .authTokenFile(tokens)
                                        .authReloadInterval(Duration.ofMillis(20))
                                        .build());
                KvStore old = connect(server, OLD)) {
            old.createTable("t_1", 1);

            Files.writeString(tokens, "# broken edit\n" + NEW + "\n");
            Thread.sleep(200);
            assertThat(old.listTables()).hasSize(1);

            Files.writeString(tokens, NEW + " t_ jobs\n");
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            KvException refused = null;
            while (refused == null && System.nanoTime() < deadline) {
                try {
                    old.listTables();
                    Thread.sleep(20);
                } catch (AuthenticationException e) {
                    refused = e;
                }
            }
            assertThat(refused).hasMessageContaining("unknown bearer token");
            try (KvStore fresh = connect(server, NEW)) {
                assertThat(fresh.listTables()).hasSize(1);
            }
            assertThatThrownBy(() -> connect(server, OLD))
                    .isInstanceOf(AuthenticationException.class);
        }
    }

    private static KvStore connect(EmbeddedKvServer server, String token) {
        return KvStores.connect(KvClientConfig.forAddresses(server.address()).token(token).build());
    }
}
