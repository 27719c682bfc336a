package io.taishan.kv.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.server.KvServerOptions.ServerOption;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * {@link KvServerOptions} is what the reference says about the config file, so it must be what the
 * server does: every declared key is applied, every documented default is the builder's own, every
 * documented flag is one the command line takes, and no other key is accepted.
 */
class KvServerOptionsTest {

    @Test
    void everyDeclaredKeyIsApplied() {
        assertThat(KvServerOptions.all()).hasSizeGreaterThan(30);
        for (ServerOption option : KvServerOptions.all()) {
            String value = option.defaultIfSet().orElse(option.type().example());
            KvServerConfig.Builder builder = KvServerConfig.builder();
            // Throws IllegalStateException for a key declared but missing from the switch.
            builder.properties(properties(sampleKey(option), value));
            if (option.defaultIfSet().isEmpty()) {
                assertThat(settings(builder))
                        .as("%s = %s changes the builder", option.key(), value)
                        .isNotEqualTo(settings(KvServerConfig.builder()));
            }
        }
    }

    @Test
    void everyDocumentedDefaultIsTheBuildersOwn() {
        Map<String, Object> defaults = settings(KvServerConfig.builder());
        for (ServerOption option : KvServerOptions.all()) {
            option.defaultIfSet()
                    .ifPresent(
                            value ->
                                    assertThat(
                                                    settings(
                                                            KvServerConfig.builder()
                                                                    .properties(
                                                                            properties(
                                                                                    option.key(),
                                                                                    value))))
                                            .as(
                                                    "the builder after %s = %s (the documented"
                                                            + " default)",
                                                    option.key(), value)
                                            .isEqualTo(defaults));
        }
    }

    @Test
    void aNonDefaultValueOfEveryKeyWithADefaultShows() {
        // Else the default check above could not fail for that key.
        for (ServerOption option : KvServerOptions.all()) {
            if (option.defaultIfSet().isEmpty()) {
                continue;
            }
            String other = otherValue(option);
            assertThat(
                            settings(
                                    KvServerConfig.builder()
                                            .properties(properties(option.key(), other))))
                    .as("the builder after %s = %s", option.key(), other)
                    .isNotEqualTo(settings(KvServerConfig.builder()));
        }
    }

    @Test
    void everyDocumentedFlagIsTakenByTheCommandLine() {
        long flags = 0;
        for (ServerOption option : KvServerOptions.all()) {
            if (option.flag().isEmpty()) {
                continue;
            }
            flags++;
            String value = option.key().equals("port") ? "7600" : option.type().example();
            String[] args = {"--port", "0", "--data-dir", "/tmp/d", option.flag().get(), value};
            try {
                KvServerMain.parse(args);
            } catch (KvServerMain.UsageException e) {
                throw new AssertionError(option.flag().get() + ": " + e.getMessage(), e);
            } catch (IllegalArgumentException e) {
                // Taken, and then refused by the config's own checks (a certificate without its
                // key).
            }
        }
        assertThat(flags).as("options with a flag").isGreaterThanOrEqualTo(7);
    }

    @Test
    void aPrefixPassesEveryKeyUnderItAndNothingElse() {
        KvServerConfig config =
                KvServerConfig.builder()
                        .properties(
                                properties(
                                        "durable.flink.s3.endpoint", "http://10.0.0.5:9000",
                                        "durable.flink.s3.access-key", "key"))
                        .build();

        assertThat(config.durable().flinkConfig())
                .containsExactlyInAnyOrderEntriesOf(
                        Map.of("s3.endpoint", "http://10.0.0.5:9000", "s3.access-key", "key"));
        assertThat(KvServerOptions.forKey("durable.flink.fs.default-scheme"))
                .contains(KvServerOptions.DURABLE_FLINK);
        assertThatThrownBy(
                        () ->
                                KvServerConfig.builder()
                                        .properties(properties("durable.flink.", "x")))
                .hasMessage("unknown config key 'durable.flink.'");
        assertThatThrownBy(
                        () ->
                                KvServerConfig.builder()
                                        .properties(properties("durable.flinkx", "x")))
                .hasMessage("unknown config key 'durable.flinkx'");
    }

    @Test
    void anUndeclaredKeyIsRefused() {
        assertThatThrownBy(
                        () -> KvServerConfig.builder().properties(properties("shard.idle", "5m")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown config key 'shard.idle'");
    }

    private static String otherValue(ServerOption option) {
        return switch (option.type()) {
            case BOOLEAN -> Boolean.toString(!Boolean.parseBoolean(option.defaultValue()));
            case INTEGER -> option.defaultValue().equals("3") ? "4" : "3";
            case DECIMAL -> "0.125";
            case SIZE -> "3k";
            case DURATION -> "3s";
            default -> option.type().example();
        };
    }

    private static Properties properties(String... keyThenValue) {
        Properties p = new Properties();
        for (int i = 0; i < keyThenValue.length; i += 2) {
            p.setProperty(keyThenValue[i], keyThenValue[i + 1]);
        }
        return p;
    }

    /** The key itself, or for a prefix one key under it. */
    private static String sampleKey(ServerOption option) {
        return option.isPrefix() ? option.key() + "example.key" : option.key();
    }

    /**
     * Every field of the builder by reflection, so a setting added later is compared without this
     * test knowing of it.
     */
    private static Map<String, Object> settings(KvServerConfig.Builder builder) {
        Map<String, Object> values = new LinkedHashMap<>();
        for (Field field : KvServerConfig.Builder.class.getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers())) {
                continue;
            }
            field.setAccessible(true);
            try {
                values.put(field.getName(), field.get(builder));
            } catch (IllegalAccessException e) {
                throw new AssertionError(e);
            }
        }
        return values;
    }
}
