package io.taishan.configreference;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The checked-in reference ({@code docs/config/}) is what the code declares, as Flink's {@code
 * ConfigOptionsDocsCompletenessITCase} holds Flink's generated docs to its options: a changed,
 * added or removed option fails the build until the reference is regenerated.
 */
class ConfigReferenceIsCurrentTest {
    private static final Path DIR =
            Path.of(System.getProperty("config.reference.dir", "../docs/config"));

    @Test
    void everyFileIsAsGenerated() throws IOException {
        for (Map.Entry<String, String> file : ConfigReferenceGenerator.render().entrySet()) {
            Path path = DIR.resolve(file.getKey());
            if (!Files.exists(path)) {
                throw new AssertionError(stale(path, "it is missing"));
            }
            String checkedIn = Files.readString(path, StandardCharsets.UTF_8);
            if (!checkedIn.equals(file.getValue())) {
                throw new AssertionError(stale(path, firstDifference(file.getValue(), checkedIn)));
            }
        }
    }

    @Test
    void theDirectoryHoldsNothingElse() throws IOException {
        try (Stream<Path> files = Files.list(DIR)) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .as("files in %s; remove those no longer generated", DIR)
                    .containsExactlyInAnyOrderElementsOf(
                            ConfigReferenceGenerator.render().keySet());
        }
    }

    private static String stale(Path path, String why) {
        return "the configuration reference "
                + path.normalize()
                + " is stale: "
                + why
                + ".\nRegenerate it from the repository's root with:\n  "
                + ConfigReferenceGenerator.REGENERATE_COMMAND
                + "\nand commit the result.";
    }

    private static String firstDifference(String generated, String checkedIn) {
        List<String> want = generated.lines().toList();
        List<String> have = checkedIn.lines().toList();
        for (int i = 0; i < Math.max(want.size(), have.size()); i++) {
            String w = i < want.size() ? want.get(i) : "(end of file)";
            String h = i < have.size() ? have.get(i) : "(end of file)";
            if (!w.equals(h)) {
                return "line " + (i + 1) + " should be\n  " + w + "\nbut is\n  " + h;
            }
        }
        return "they differ only in line endings or the final newline";
    }
}
