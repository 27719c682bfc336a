package io.taishan.kv.server.durable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The metadata pack's format: files round trip byte for byte (an empty one too), and whatever is
 * not a pack written by {@link MetadataPack#write}, or a pack with other bytes, is refused with a
 * {@link MetadataPack.FormatException} saying what is wrong; names that would leave the directory
 * are refused before anything is written.
 */
class MetadataPackTest {
    @TempDir Path tmp;

    @Test
    void filesRoundTripByteForByte() throws Exception {
        Path from = tmp.resolve("from");
        List<String> names =
                Cuts.write(
                        from,
                        5,
                        Map.of(
                                "MANIFEST-000001",
                                70_000,
                                "CURRENT",
                                16,
                                "EMPTY",
                                0,
                                "OPTIONS-1",
                                6_500));
        byte[] pack = pack(from, names);

        Path to = Files.createDirectories(tmp.resolve("to"));
        List<String> unpacked = MetadataPack.unpack(new ByteArrayInputStream(pack), to, Set.of());

        assertThat(unpacked).containsExactlyElementsOf(names);
        CutDownloadTest.assertSameFiles(to, from);
        long expected = 4 + 1 + 2;
        for (String name : names) {
            expected += 2 + name.length() + 8 + Files.size(from.resolve(name)) + 4;
        }
        assertThat(pack.length).as("the length the upload plans for").isEqualTo(expected);
    }

    @Test
    void anEmptyPackHoldsNothing() throws Exception {
        byte[] pack = pack(tmp, List.of());
        assertThat(pack).hasSize(7);
        assertThat(MetadataPack.unpack(new ByteArrayInputStream(pack), tmp, Set.of())).isEmpty();
    }

    @Test
    void whatIsNotAPackIsRefused() throws Exception {
        byte[] pack = onePack();

        assertRefused(
                "not a zip at all".getBytes(StandardCharsets.UTF_8), "not a Taishan metadata pack");
        byte[] version = pack.clone();
        version[4] = 9;
        assertRefused(version, "metadata pack version 9, not 1");
        assertRefused(Arrays.copyOf(pack, pack.length - 1), "metadata pack ends early");
        assertRefused(Arrays.copyOf(pack, 3), "metadata pack ends early");
        byte[] longer = Arrays.copyOf(pack, pack.length + 1);
        assertRefused(longer, "bytes after the end of the metadata pack");
    }

    @Test
    void anEntryWithOtherBytesIsRefusedNamingIt() throws Exception {
        byte[] pack = onePack();
        // magic 4, version 1, name length 2, "CURRENT" 7, size 8: the content starts at 22.
        pack[25] ^= 0x10;

        assertRefused(pack, "metadata pack entry 'CURRENT' has CRC32C ");
    }

    @Test
    void namesThatLeaveTheDirectoryOrRepeatAreRefused() throws Exception {
        assertRefused(
                handMade("../escape"), "metadata pack entry not a plain file name: '../escape'");
        assertRefused(handMade("sub/file"), "not a plain file name");
        assertRefused(handMade(".."), "not a plain file name");
        assertRefused(handMade("CURRENT", "CURRENT"), "metadata pack holds 'CURRENT' twice");
        assertThatThrownBy(
                        () ->
                                MetadataPack.unpack(
                                        new ByteArrayInputStream(onePack()),
                                        Files.createDirectories(tmp.resolve("reserved")),
                                        Set.of("CURRENT")))
                .isInstanceOf(MetadataPack.FormatException.class)
                .hasMessage("metadata pack holds 'CURRENT' twice");
        assertThat(Files.exists(tmp.resolve("escape"))).isFalse();
    }

    private byte[] onePack() throws IOException {
        Path dir = tmp.resolve("one");
        return pack(dir, Cuts.write(dir, 6, Map.of("CURRENT", 16)));
    }

    private static byte[] pack(Path dir, List<String> names) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        MetadataPack.write(dir, names, out);
        return out.toByteArray();
    }

    /** A pack with these names, each of one byte (its CRC32C right), written by hand. */
    private static byte[] handMade(String... names) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(MetadataPack.MAGIC);
        out.writeByte(MetadataPack.VERSION);
        for (String name : names) {
            byte[] n = name.getBytes(StandardCharsets.UTF_8);
            out.writeShort(n.length);
            out.write(n);
            out.writeLong(1);
            out.write(7);
            out.writeInt(Remote.crc32c(new byte[] {7}));
        }
        out.writeShort(0);
        return bytes.toByteArray();
    }

    private void assertRefused(byte[] pack, String message) throws IOException {
        Path dir = Files.createTempDirectory(tmp, "unpack");
        assertThatThrownBy(() -> MetadataPack.unpack(new ByteArrayInputStream(pack), dir, Set.of()))
                .isInstanceOf(MetadataPack.FormatException.class)
                .hasMessageContaining(message);
    }
}
