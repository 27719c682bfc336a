package io.taishan.kv.server.durable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What Flink's file systems are configured with: the keys of a Flink configuration directory, the
 * node's {@code durable.flink.*} keys over them, as a file system factory sees them at {@code
 * FileSystem.initialize}; an unreadable directory stops the start with one line naming the key.
 */
class FlinkFileSystemsTest {
    @TempDir Path tmp;

    @Test
    void theFactoriesGetTheConfDirsKeysWithTheNodesOnTop() throws Exception {
        Path conf = Files.createDirectories(tmp.resolve("conf"));
        Files.writeString(
                conf.resolve("config.yaml"),
                "s3:\n  endpoint: http://from-the-conf-dir:9000\n  path.style.access: true\n"
                        + "fs.faulty.only-in-conf: yes\n");
        DurableOptions options =
                new DurableOptions(
                        true,
                        conf,
                        Map.of("s3.endpoint", "http://from-the-node:9000", "s3.access-key", "k"),
                        null,
                        1,
                        1,
                        Duration.ZERO,
                        Duration.ofMinutes(1));

        CutTransfers.start(options).close();

        Map<String, String> seen = FaultyFileSystem.configured().toMap();
        assertThat(seen)
                .containsEntry("s3.endpoint", "http://from-the-node:9000")
                .containsEntry("s3.path.style.access", "true")
                .containsEntry("s3.access-key", "k")
                .containsEntry("fs.faulty.only-in-conf", "yes");
    }

    @Test
    void theOptionsNeverShowTheFlinkKeysValues() {
        DurableOptions options =
                new DurableOptions(
                        true,
                        null,
                        Map.of("s3.secret-key", "hunter2"),
                        null,
                        1,
                        1,
                        Duration.ZERO,
                        Duration.ofMinutes(1));

        assertThat(options.toString()).contains("s3.secret-key").doesNotContain("hunter2");
    }

    @Test
    void directoriesThatCannotBeReadStopTheStart() {
        Path nowhere = tmp.resolve("nowhere");
        assertThatThrownBy(() -> CutTransfers.start(withDirs(nowhere, null)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("durable.flink-conf-dir " + nowhere + " is not a directory");
        assertThatThrownBy(() -> CutTransfers.start(withDirs(null, nowhere)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("durable.plugins-dir " + nowhere + " is not a directory");
    }

    private static DurableOptions withDirs(Path conf, Path plugins) {
        return new DurableOptions(
                true, conf, Map.of(), plugins, 1, 1, Duration.ZERO, Duration.ofMinutes(1));
    }
}
