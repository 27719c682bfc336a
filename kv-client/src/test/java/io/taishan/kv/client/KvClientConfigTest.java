package io.taishan.kv.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
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
    }

    @Test
    void readChannelsDefaultAndSet() {
        assertThat(KvClientConfig.forAddresses("a:1").build().readChannels())
                .isEqualTo(KvClientConfig.DEFAULT_READ_CHANNELS);
        assertThat(KvClientConfig.forAddresses("a:1").readChannels(3).build().readChannels())
                .isEqualTo(3);
    }
}
