package example.options;

import java.time.Duration;
import java.util.List;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.description.Description;
import org.apache.flink.configuration.description.TextElement;

/**
 * Options with what Taishan's own do not have yet (fallback and deprecated keys, lists, a
 * structured description), outside {@code io.taishan} so the real reference never shows them.
 */
public final class ExampleOptions {
    private ExampleOptions() {}

    public enum Mode {
        FAST,
        SAFE
    }

    public static final ConfigOption<Duration> RENAMED =
            ConfigOptions.key("example.new-name")
                    .durationType()
                    .defaultValue(Duration.ofMinutes(5))
                    .withFallbackKeys("example.fallback-name")
                    .withDeprecatedKeys("example.old-name")
                    .withDescription("Table <prefix>_<id>, a | b, 100% sure.");

    public static final ConfigOption<List<String>> LIST =
            ConfigOptions.key("example.list")
                    .stringType()
                    .asList()
                    .defaultValues("a", "b")
                    .withDescription(
                            Description.builder()
                                    .text("See %s for ", TextElement.code("x|y"))
                                    .linebreak()
                                    .text("more.")
                                    .build());

    static final ConfigOption<Mode> PACKAGE_PRIVATE_MODE =
            ConfigOptions.key("example.mode")
                    .enumType(Mode.class)
                    .noDefaultValue()
                    .withDescription("How.");
}
