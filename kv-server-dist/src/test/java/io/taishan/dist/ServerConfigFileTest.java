package io.taishan.dist;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.KvServerConfig;
import io.taishan.kv.server.KvServerOptions;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The shipped {@code conf/taishan-kv-server.properties} is what an operator reads as the reference
 * of the server's options, so it must list every key the server declares ({@link KvServerOptions},
 * the source of the generated reference), each once, and the values it shows must be the defaults
 * the server really has: uncommenting everything must start the same server as leaving it all
 * commented out.
 */
class ServerConfigFileTest {
    /** {@code key = value} as written, commented out ({@code #key = value}) or not. */
    private static final Pattern ENTRY =
            Pattern.compile("^(#?)([a-z][a-z0-9-]*(?:\\.[a-z0-9-]+)*)\\s*=\\s*(.*)$");

    private static final Path CONF_DIR = Path.of(System.getProperty("taishan.dist.conf"));

    private record Entry(boolean commented, String key, String value) {}

    @Test
    void listsEveryKeyTheServerDeclaresExactlyOnce() throws IOException {
        // A key under a prefix option (durable.flink.s3.endpoint) stands for that option.
        List<String> keys =
                entries().stream()
                        .map(
                                e ->
                                        KvServerOptions.forKey(e.key())
                                                .map(KvServerOptions.ServerOption::key)
                                                .orElse(e.key()))
                        .toList();

        assertThat(keys).doesNotHaveDuplicates();
        assertThat(keys)
                .containsExactlyInAnyOrderElementsOf(
                        KvServerOptions.all().stream()
                                .map(KvServerOptions.ServerOption::key)
                                .toList());
    }

    @Test
    void everyValueShownIsTheServersDefault() throws IOException {
        Map<String, String> active = new LinkedHashMap<>();
        Properties everything = new Properties();
        for (Entry e : entries()) {
            if (!e.commented()) {
                active.put(e.key(), e.value());
            }
            // A key shown without a value (a file path, the node list) has no default.
            if (!e.value().isEmpty()) {
                everything.setProperty(e.key(), e.value());
            }
        }
        assertThat(active.keySet()).containsExactly("host", "port", "data.dir");
        assertThat(active).containsEntry("host", "127.0.0.1").containsEntry("port", "7600");

        KvServerConfig uncommented = KvServerConfig.builder().properties(everything).build();
        Properties shipped = new Properties();
        try (Reader r = Files.newBufferedReader(conf(), StandardCharsets.UTF_8)) {
            shipped.load(r);
        }
        KvServerConfig asShipped = KvServerConfig.builder().properties(shipped).build();
        KvServerConfig defaults =
                KvServerConfig.builder()
                        .host("127.0.0.1")
                        .port(7600)
                        .dataDir(Path.of(active.get("data.dir")))
                        .build();

        for (KvServerConfig c : List.of(uncommented, asShipped)) {
            assertThat(c.toString()).isEqualTo(defaults.toString());
            assertThat(c.ttlSweepInterval()).isEqualTo(defaults.ttlSweepInterval());
            assertThat(c.ttlSweepBytesPerSecond()).isEqualTo(defaults.ttlSweepBytesPerSecond());
            assertThat(c.security().tokenReloadInterval())
                    .isEqualTo(defaults.security().tokenReloadInterval());
        }
    }

    private static Path conf() {
        return CONF_DIR.resolve("taishan-kv-server.properties");
    }

    private static List<Entry> entries() throws IOException {
        List<Entry> entries = new ArrayList<>();
        for (String line : Files.readAllLines(conf(), StandardCharsets.UTF_8)) {
            Matcher m = ENTRY.matcher(line);
            if (m.matches()) {
                entries.add(new Entry(!m.group(1).isEmpty(), m.group(2), m.group(3).trim()));
            }
        }
        return entries;
    }
}
