package io.taishan.configreference;

import io.taishan.kv.server.KvServerOptions;
import io.taishan.kv.server.KvServerOptions.ServerOption;
import io.taishan.kv.server.KvServerOptions.ValueType;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;

/** {@code docs/config/kv-server-options.md}, from {@link KvServerOptions}. */
final class KvServerOptionsReference {
    static final String FILE_NAME = "kv-server-options.md";

    private KvServerOptionsReference() {}

    static String render(List<ServerOption> declared) {
        List<ServerOption> options =
                declared.stream().sorted(Comparator.comparing(ServerOption::key)).toList();
        StringBuilder md = new StringBuilder();
        md.append(ConfigReferenceGenerator.header());
        md.append("# kv-server options\n\n");
        md.append(
                """
                Every key of a kv-server config file, as declared in `io.taishan.kv.server.KvServerOptions`.
                The file is a Java properties file (`key = value`, `#` comments) given with
                `bin/taishan-kv-server --config FILE`; where a key has a command-line flag, the flag wins
                over the file. An unknown key or a bad value stops the start with one line naming the key
                (exit code 2).

                | type | written as |
                |---|---|
                """);
        EnumSet<ValueType> used = EnumSet.noneOf(ValueType.class);
        options.forEach(option -> used.add(option.type()));
        for (ValueType type : used) {
            md.append("| ")
                    .append(type.typeName())
                    .append(" | ")
                    .append(type.syntax())
                    .append(" |\n");
        }
        md.append("\n| key | type | default | flag | description |\n");
        md.append("|---|---|---|---|---|\n");
        for (ServerOption option : options) {
            md.append("| ")
                    .append(Markdown.code(option.documentedKey()))
                    .append(" | ")
                    .append(option.type().typeName())
                    .append(" | ")
                    .append(option.defaultIfSet().map(Markdown::code).orElse("(none)"))
                    .append(" | ")
                    .append(option.flag().map(Markdown::code).orElse(""))
                    .append(" | ")
                    .append(Markdown.escapeCell(option.description()))
                    .append(" |\n");
        }
        return md.toString();
    }
}
