package io.taishan.kv.server.durable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reuse sidecar: it reads back what was written, offers only the copies the caller allows under
 * the identities of its store's files, moves to a fork's id, and a damaged one is refused rather
 * than trusted.
 */
class FileOriginsTest {
    @TempDir Path tmp;

    private final RemoteFile a = new RemoteFile("s3://b/shared/aaa", 1_000, 0x11);
    private final RemoteFile b = new RemoteFile("s3://b/shared/bbb", 2_000, 0x22);
    private final FileOrigins origins =
            FileOrigins.of(
                    "store-7", List.of(new CutFile("000010.sst", a), new CutFile("000011.sst", b)));

    @Test
    void readsBackWhatWasWritten() throws IOException {
        assertThat(FileOrigins.readFrom(tmp)).isEmpty();

        origins.writeTo(tmp);

        assertThat(FileOrigins.readFrom(tmp)).contains(origins);
        assertThat(Cuts.names(tmp)).containsExactly(FileOrigins.FILE_NAME);
    }

    @Test
    void offersOnlyTheAllowedCopiesUnderTheirFilesIdentities() {
        assertThat(origins.reusable(Set.of("s3://b/shared/bbb")::contains))
                .containsExactly(Map.entry(new FileIdentity("store-7", "000011.sst", 2_000), b));
        assertThat(origins.reusable(path -> true)).hasSize(2);
        assertThat(origins.reusable(path -> false)).isEmpty();
    }

    @Test
    void aForkOffersTheSameCopiesUnderItsOwnId() {
        assertThat(origins.forStore("fork-9").reusable(path -> true))
                .containsOnlyKeys(
                        new FileIdentity("fork-9", "000010.sst", 1_000),
                        new FileIdentity("fork-9", "000011.sst", 2_000));
    }

    @Test
    void aDamagedSidecarIsRefused() throws IOException {
        origins.writeTo(tmp);
        Path file = tmp.resolve(FileOrigins.FILE_NAME);
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(20);
            int x = raf.read();
            raf.seek(20);
            raf.write(x ^ 1);
        }

        assertThatThrownBy(() -> FileOrigins.readFrom(tmp))
                .isInstanceOf(IOException.class)
                .hasMessage("corrupt " + file + ": CRC32C mismatch");

        Files.write(file, new byte[] {1, 2});
        assertThatThrownBy(() -> FileOrigins.readFrom(tmp)).hasMessageContaining("too short");
    }
}
