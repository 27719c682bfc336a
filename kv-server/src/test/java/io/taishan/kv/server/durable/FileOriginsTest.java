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
    void aCutUploadedAgainKeepsOfferingItsEarlierCopiesNewestFirst() throws IOException {
        RemoteFile a2 = new RemoteFile("s3://b/savepoint/aaa2", 1_000, 0x11);
        RemoteFile a3 = new RemoteFile("s3://b/shared/aaa3", 1_000, 0x11);
        RemoteFile a4 = new RemoteFile("s3://b/shared/aaa4", 1_000, 0x11);
        FileOrigins savepoint = FileOrigins.of("store-7", List.of(new CutFile("000010.sst", a2)));

        FileOrigins merged = savepoint.after(origins);

        // The file the new upload copied has both copies; one it did not name is not taken over.
        assertThat(merged.copiesByFileName()).containsOnlyKeys("000010.sst");
        assertThat(merged.copiesByFileName().get("000010.sst")).containsExactly(a2, a);
        assertThat(merged.byFileName()).containsExactly(Map.entry("000010.sst", a2));
        // The checkpoint after the savepoint may reuse only the earlier checkpoint's copy.
        assertThat(merged.reusable(Set.of(a.path())::contains))
                .containsExactly(Map.entry(new FileIdentity("store-7", "000010.sst", 1_000), a));
        assertThat(merged.reusable(path -> true).values()).containsExactly(a2);

        FileOrigins kept =
                FileOrigins.of("store-7", List.of(new CutFile("000010.sst", a4)))
                        .after(
                                FileOrigins.of("store-7", List.of(new CutFile("000010.sst", a3)))
                                        .after(merged));
        assertThat(kept.copiesByFileName().get("000010.sst")).containsExactly(a4, a3, a2);
        kept.writeTo(tmp);
        assertThat(FileOrigins.readFrom(tmp)).contains(kept);

        // Another store's record is not merged: its names mean other bytes.
        assertThat(savepoint.after(origins.forStore("fork-9"))).isEqualTo(savepoint);
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
