package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

/**
 * Every option {@link TaishanOptions} declares (found by reflection) is taken from the cluster's or
 * the job's configuration by {@link TaishanStateBackend#configure}: an option in the reference
 * (docs/config/taishan-flink-options.md) is never silently ignored because the backend's own list
 * of options missed it.
 */
class TaishanOptionsTakenTest {
    /** Values for the options without a default; a new such option needs one here. */
    private static final Map<String, String> SAMPLES =
            Map.of(
                    "taishan.kv.address", "localhost:7600",
                    "taishan.kv.tls.trust-cert-file", "/etc/taishan/ca.pem",
                    "taishan.kv.tls.cert-file", "/etc/taishan/client.pem",
                    "taishan.kv.tls.key-file", "/etc/taishan/client.key",
                    "taishan.kv.token-file", "/etc/taishan/token",
                    "taishan.kv.token", "0123456789abcdef0123",
                    "taishan.cache.size", "16 mb",
                    "taishan.cache.local-dir", "/mnt/ssd/taishan");

    @Test
    void everyDeclaredOptionIsTakenFromTheConfiguration() throws Exception {
        List<ConfigOption<?>> options = declared();
        assertThat(options).hasSizeGreaterThan(15);
        // The token and the token file exclude each other: one configuration with each.
        for (String without : List.of("taishan.kv.token", "taishan.kv.token-file")) {
            Configuration config = new Configuration();
            List<String> keys = new ArrayList<>();
            for (ConfigOption<?> option : options) {
                if (option.key().equals(without)) {
                    continue;
                }
                config.setString(option.key(), sampleOf(option));
                keys.add(option.key());
            }
            config.setString(TaishanOptions.KV_TLS_ENABLED.key(), "true");
            String configured =
                    new TaishanStateBackend()
                            .configure(config, getClass().getClassLoader())
                            .toString();
            for (String key : keys) {
                assertThat(configured).as("the configured backend").contains(key + "=");
            }
        }
    }

    private static String sampleOf(ConfigOption<?> option) {
        if (option.hasDefaultValue()) {
            Configuration written = new Configuration();
            setDefault(written, option);
            return written.toMap().get(option.key());
        }
        String sample = SAMPLES.get(option.key());
        if (sample == null) {
            throw new AssertionError(
                    option.key() + " has no default: add a value for it to SAMPLES in this test");
        }
        return sample;
    }

    private static <T> void setDefault(Configuration config, ConfigOption<T> option) {
        config.set(option, option.defaultValue());
    }

    private static List<ConfigOption<?>> declared() throws IllegalAccessException {
        List<ConfigOption<?>> options = new ArrayList<>();
        for (Field field : TaishanOptions.class.getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers())
                    && ConfigOption.class.isAssignableFrom(field.getType())) {
                options.add((ConfigOption<?>) field.get(null));
            }
        }
        return options;
    }
}
