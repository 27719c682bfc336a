package io.taishan.dist.job;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;

/**
 * Writes each key's final state to {@code <dir>/key-<key>}, atomically, so a test on the same host
 * reads whole files only. A key emitted again after a failover overwrites its file with what must
 * be the same line. Stateless.
 */
final class FinalStateFileSink implements Sink<String> {
    private static final long serialVersionUID = 1L;

    private final String dir;

    FinalStateFileSink(String dir) {
        this.dir = dir;
    }

    // The only abstract factory method in Flink 1.20; its WriterInitContext twin delegates here.
    @Override
    @SuppressWarnings("deprecation")
    public SinkWriter<String> createWriter(InitContext context) throws IOException {
        Path out = Files.createDirectories(Path.of(dir));
        return new SinkWriter<>() {
            @Override
            public void write(String line, Context context) throws IOException {
                String key = line.substring("key=".length(), line.indexOf(' '));
                Path temp = Files.createTempFile(out, ".key-" + key, ".tmp");
                Files.writeString(temp, line + "\n", StandardCharsets.UTF_8);
                Files.move(
                        temp,
                        out.resolve("key-" + key),
                        StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
            }

            @Override
            public void flush(boolean endOfInput) {}

            @Override
            public void close() {}
        };
    }
}
