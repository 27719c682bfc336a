package io.taishan.configreference;

import io.taishan.kv.server.KvServerOptions;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Writes the configuration reference, {@code docs/config/*.md}, from the options declared in the
 * code, as Flink's {@code ConfigOptionsDocGenerator} writes Flink's. Run it with {@value
 * #REGENERATE_COMMAND}; {@code ConfigReferenceIsCurrentTest} fails the build when the checked-in
 * files differ from what it would write.
 */
public final class ConfigReferenceGenerator {
    /** The one command that regenerates the reference (from the repository's root). */
    public static final String REGENERATE_COMMAND =
            "mvn -pl config-reference -am -Pregenerate-config-reference process-classes";

    private ConfigReferenceGenerator() {}

    /** Every file of the reference by its name in {@code docs/config/}. */
    public static Map<String, String> render() {
        Map<String, String> files = new LinkedHashMap<>();
        files.put(
                FlinkOptionsReference.FILE_NAME,
                FlinkOptionsReference.render(
                        FlinkOptionHolders.find(ConfigReferenceGenerator.class.getClassLoader())));
        files.put(
                KvServerOptionsReference.FILE_NAME,
                KvServerOptionsReference.render(KvServerOptions.all()));
        return files;
    }

    static String header() {
        return "<!-- Generated from the code by io.taishan.configreference.ConfigReferenceGenerator:"
                + " do not edit.\n     Regenerate with: "
                + REGENERATE_COMMAND
                + " -->\n\n";
    }

    /** {@code ConfigReferenceGenerator <docs/config directory>} */
    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: ConfigReferenceGenerator <output directory>");
            System.exit(2);
        }
        Path dir = Path.of(args[0]).toAbsolutePath().normalize();
        Files.createDirectories(dir);
        for (Map.Entry<String, String> file : render().entrySet()) {
            Path path = dir.resolve(file.getKey());
            byte[] content = file.getValue().getBytes(StandardCharsets.UTF_8);
            if (Files.exists(path) && java.util.Arrays.equals(Files.readAllBytes(path), content)) {
                System.out.println("config reference: " + path + " is current");
            } else {
                Files.write(path, content);
                System.out.println("config reference: wrote " + path);
            }
        }
    }
}
