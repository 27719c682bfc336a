package io.taishan.kv.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KvClientConfigTest {

    @Test
    void parsesAListOfAddressesIgnoringBlanks() {
        KvClientConfig config =
                KvClientConfig.forAddresses(" a:1, b.example:65535 ,,[::1]:9 ").build();
        assertThat(config.addresses()).containsExactly("a:1", "b.example:65535", "[::1]:9");
        assertThat(config.maxAttempts()).isEqualTo(3);
        assertThat(config.requestTimeout()).isEqualTo(Duration.ofSeconds(10));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " , ", ","})
    void rejectsAnEmptyList(String list) {
        assertThatThrownBy(() -> KvClientConfig.forAddresses(list))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no kv-server address");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "host",
                "host:",
                ":80",
                "host:port",
                "host:0",
                "host:65536",
                "h:-1",
                "127.0.0.1:7600:9",
                "::1:80"
            })
    void rejectsABadAddressNamingIt(String address) {
        assertThatThrownBy(() -> KvClientConfig.forAddresses("ok:1," + address))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + address + "'");
    }

    @Test
    void rejectsNonsensicalSettings() {
        KvClientConfig.Builder builder = KvClientConfig.forAddresses("a:1");
        assertThatThrownBy(() -> builder.maxAttempts(0))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> builder.requestTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> builder.requestTimeout(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> builder.readChannels(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("read channels");
        assertThatThrownBy(() -> builder.readChannels(KvClientConfig.MAX_READ_CHANNELS + 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> builder.durableCallTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("durable call timeout");
    }

    /**
     * Calls to checkpoint storage get a deadline of their own, longer than a node's own bound on a
     * transfer (10 minutes), and two configs that differ in it are two clients.
     */
    @Test
    void durableCallTimeoutDefaultAndSet() {
        KvClientConfig defaults = KvClientConfig.forAddresses("a:1").build();
        assertThat(defaults.durableCallTimeout()).isEqualTo(Duration.ofMinutes(15));
        KvClientConfig longer =
                KvClientConfig.forAddresses("a:1").durableCallTimeout(Duration.ofHours(1)).build();
        assertThat(longer.durableCallTimeout()).isEqualTo(Duration.ofHours(1));
        assertThat(longer).isNotEqualTo(defaults);
        assertThat(longer.toString()).contains("durableCallTimeout=PT1H");
    }

    @Test
    void readChannelsDefaultAndSet() {
        assertThat(KvClientConfig.forAddresses("a:1").build().readChannels())
                .isEqualTo(KvClientConfig.DEFAULT_READ_CHANNELS);
        assertThat(KvClientConfig.forAddresses("a:1").readChannels(3).build().readChannels())
                .isEqualTo(3);
    }

    @Test
    void theTokenIsNeverPrintedButTellsConfigsApart() {
        String token = "s3cr3t-0123456789abcdef";
        KvClientConfig withToken =
                KvClientConfig.forAddresses("a:1")
                        .tls(KvClientTls.trusting(Path.of("/ca.pem")))
                        .token(token)
                        .build();
        assertThat(withToken.toString())
                .doesNotContain(token)
                .contains("token=<hidden>")
                .contains("trust=/ca.pem");
        assertThat(withToken.hasToken()).isTrue();
        assertThat(withToken)
                .isEqualTo(
                        KvClientConfig.forAddresses("a:1")
                                .tls(KvClientTls.trusting(Path.of("/ca.pem")))
                                .token(token)
                                .build());
        // Two jobs with different tokens must never share one client.
        assertThat(withToken)
                .isNotEqualTo(
                        KvClientConfig.forAddresses("a:1")
                                .tls(KvClientTls.trusting(Path.of("/ca.pem")))
                                .token(token + "x")
                                .build());
        assertThat(withToken.toString())
                .isEqualTo(
                        KvClientConfig.forAddresses("a:1")
                                .tls(KvClientTls.trusting(Path.of("/ca.pem")))
                                .token(token + "x")
                                .build()
                                .toString());
        assertThat(KvClientConfig.forAddresses("a:1").build().toString()).contains("plaintext");
    }

    @Test
    void aTokenFileGivesItsFirstLineThatIsNotAComment(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("token");
        Files.writeString(file, "# rotated 2026-12-01\n\n  abcdefghijklmnop-token  \nignored\n");
        KvClientConfig config = KvClientConfig.forAddresses("a:1").tokenFile(file).build();
        assertThat(config.token()).isEqualTo("abcdefghijklmnop-token");

        Files.writeString(file, "# nothing\n");
        assertThatThrownBy(() -> KvClientConfig.forAddresses("a:1").tokenFile(file))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("kv-server token file " + file + " holds no token");
        Files.writeString(file, "two words\n");
        assertThatThrownBy(() -> KvClientConfig.forAddresses("a:1").tokenFile(file))
                .hasMessageContaining("visible ASCII (no spaces) at position 4")
                .hasMessageNotContaining("words");
        assertThatThrownBy(
                        () -> KvClientConfig.forAddresses("a:1").tokenFile(dir.resolve("missing")))
                .hasMessageContaining("cannot be read: java.nio.file.NoSuchFileException");
        assertThatThrownBy(() -> KvClientConfig.forAddresses("a:1").token("bad token"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
