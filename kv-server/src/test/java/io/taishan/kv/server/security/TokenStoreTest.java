package io.taishan.kv.server.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenStoreTest {
    private static final String OLD = "0123456789abcdef-old";
    private static final String NEW = "0123456789abcdef-new";

    @TempDir Path dir;

    @Test
    void aChangedFileReplacesTheCredentialsAndABrokenOneKeepsThem() throws Exception {
        Path file = dir.resolve("tokens");
        Files.writeString(file, OLD + " a_ team\n");
        try (TokenStore store = TokenStore.open(file, Duration.ZERO)) {
            assertThat(store.reloadIfChanged()).isFalse();
            assertThat(store.current().authenticate(OLD)).isNotNull();

            // Same size and, within the file system's granularity, the same time: content counts.
            Files.writeString(file, NEW + " a_ team\n");
            assertThat(store.reloadIfChanged()).isTrue();
            assertThat(store.current().authenticate(OLD)).isNull();
            assertThat(store.current().authenticate(NEW).prefixes()).containsExactly("a_");

            Files.writeString(file, "half-written");
            assertThat(store.reloadIfChanged()).isFalse();
            assertThat(store.current().authenticate(NEW)).isNotNull();

            Files.delete(file);
            assertThat(store.reloadIfChanged()).isFalse();
            assertThat(store.current().authenticate(NEW)).isNotNull();

            Files.writeString(file, OLD + " * ops\n");
            assertThat(store.reloadIfChanged()).isTrue();
            assertThat(store.current().authenticate(OLD).admin()).isTrue();
        }
    }

    @Test
    void theWatcherPicksUpAChangeByItself() throws Exception {
        Path file = dir.resolve("tokens");
        Files.writeString(file, OLD + " a_\n");
        try (TokenStore store = TokenStore.open(file, Duration.ofMillis(20))) {
            Files.writeString(file, NEW + " a_\n");
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (store.current().authenticate(NEW) == null && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(store.current().authenticate(NEW)).isNotNull();
            assertThat(store.current().authenticate(OLD)).isNull();
        }
    }
}
