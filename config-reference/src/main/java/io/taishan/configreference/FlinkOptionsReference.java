package io.taishan.configreference;

import io.taishan.configreference.FlinkOptionHolders.DeclaredOption;
import io.taishan.configreference.FlinkOptionHolders.Holder;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.FallbackKey;

/** {@code docs/config/taishan-flink-options.md}: one table per class that declares options. */
final class FlinkOptionsReference {
    static final String FILE_NAME = "taishan-flink-options.md";

    private FlinkOptionsReference() {}

    static String render(List<Holder> holders) {
        StringBuilder md = new StringBuilder();
        md.append(ConfigReferenceGenerator.header());
        md.append("# Flink options of the Taishan state backend\n\n");
        md.append(
                """
                Every Flink `ConfigOption` that Taishan declares, found by reflection over its classes.
                They apply once the backend is chosen with
                `state.backend.type: io.taishan.backend.TaishanStateBackendFactory`. Set them in Flink's
                `config.yaml` (the whole cluster), per job with `flink run -D<key>=<value>` or the job's
                `Configuration`; settings made in code on a `TaishanStateBackend` object win over both.
                The values are written as Flink writes them: durations `10 s`, `50 ms`, `1 min`; sizes
                `1 mb`, `256 kb`; enums by name.

                """);
        for (Holder holder : holders) {
            md.append("## `").append(holder.type().getName()).append("`\n\n");
            md.append("| key | default | type | description |\n");
            md.append("|---|---|---|---|\n");
            for (DeclaredOption declared : holder.options()) {
                ConfigOption<?> option = declared.option();
                md.append("| ")
                        .append(Markdown.code(option.key()))
                        .append(" | ")
                        .append(defaultValue(option))
                        .append(" | ")
                        .append(Markdown.escapeCell(typeName(declared.valueType())))
                        .append(" | ")
                        .append(description(declared))
                        .append(" |\n");
            }
            md.append('\n');
        }
        return md.toString();
    }

    private static String description(DeclaredOption declared) {
        ConfigOption<?> option = declared.option();
        StringBuilder text =
                new StringBuilder(new MarkdownFormatter().format(option.description()));
        if (declared.valueType() instanceof Class<?> type && type.isEnum()) {
            text.append("<br>Possible values: ")
                    .append(
                            Arrays.stream(type.getEnumConstants())
                                    .map(constant -> Markdown.code(((Enum<?>) constant).name()))
                                    .collect(Collectors.joining(", ")))
                    .append('.');
        }
        List<FallbackKey> keys =
                StreamSupport.stream(option.fallbackKeys().spliterator(), false).toList();
        appendKeys(text, "Fallback keys", keys.stream().filter(k -> !k.isDeprecated()).toList());
        appendKeys(
                text, "Deprecated keys", keys.stream().filter(FallbackKey::isDeprecated).toList());
        return text.toString();
    }

    private static void appendKeys(StringBuilder text, String label, List<FallbackKey> keys) {
        if (!keys.isEmpty()) {
            text.append("<br>")
                    .append(label)
                    .append(": ")
                    .append(
                            keys.stream()
                                    .map(k -> Markdown.code(k.getKey()))
                                    .collect(Collectors.joining(", ")))
                    .append('.');
        }
    }

    /** As a user writes it in {@code config.yaml}: Flink's own conversion to a string. */
    private static <T> String defaultValue(ConfigOption<T> option) {
        if (!option.hasDefaultValue()) {
            return "(none)";
        }
        Configuration config = new Configuration();
        config.set(option, option.defaultValue());
        Map<String, String> written = config.toMap();
        return Markdown.code(written.get(option.key()));
    }

    static String typeName(Type type) {
        if (type instanceof Class<?> c) {
            return c.isEnum() ? "Enum" : c.getSimpleName();
        }
        if (type instanceof ParameterizedType p && p.getRawType() instanceof Class<?> raw) {
            String args =
                    Arrays.stream(p.getActualTypeArguments())
                            .map(FlinkOptionsReference::typeName)
                            .collect(Collectors.joining(", "));
            return raw.getSimpleName() + "<" + args + ">";
        }
        throw new IllegalArgumentException("no reference type for " + type);
    }
}
