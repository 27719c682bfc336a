package io.taishan.kv.server.durable;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/** What the tests check of objects a transfer wrote to a local directory ({@code file://}). */
final class Remote {
    private Remote() {}

    /** The local file behind a {@code file:} or {@code faulty:} remote path. */
    static Path file(RemoteFile remote) {
        return Path.of(new org.apache.flink.core.fs.Path(remote.path()).toUri().getPath());
    }

    static int crc32c(byte[] bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes);
        return (int) crc.getValue();
    }

    /** The object exists and holds exactly {@code local}'s bytes, as its record says. */
    static void assertCopyOf(RemoteFile remote, Path local) throws IOException {
        byte[] expected = Files.readAllBytes(local);
        assertThat(Files.readAllBytes(file(remote))).as(remote.path()).isEqualTo(expected);
        assertThat(remote.sizeBytes()).isEqualTo(expected.length);
        assertThat(remote.crc32c()).isEqualTo(crc32c(expected));
    }
}
