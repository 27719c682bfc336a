package io.taishan.kv.server.storage;

import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/**
 * What the server knows about one durable snapshot of a shard; kept beside its files, so a snapshot
 * and its metadata appear (rename) and disappear together.
 *
 * @param reused true when it was made from the previous snapshot's files because the shard had not
 *     changed since
 */
public record SnapshotMeta(
        long snapshotId,
        boolean pinned,
        long createdAtMillis,
        long sizeBytes,
        int fileCount,
        boolean reused) {

    /** The metadata file inside a snapshot directory; never a RocksDB file name. */
    static final String FILE_NAME = "TAISHAN-SNAPSHOT";

    byte[] toBytes() {
        Properties p = new Properties();
        p.setProperty("snapshot.id", Long.toString(snapshotId));
        p.setProperty("pinned", Boolean.toString(pinned));
        p.setProperty("created.at.millis", Long.toString(createdAtMillis));
        p.setProperty("size.bytes", Long.toString(sizeBytes));
        p.setProperty("file.count", Integer.toString(fileCount));
        p.setProperty("reused", Boolean.toString(reused));
        StringWriter w = new StringWriter();
        try {
            p.store(w, "Taishan shard snapshot");
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return w.toString().getBytes(StandardCharsets.UTF_8);
    }

    static SnapshotMeta read(Path snapshotDir) throws IOException {
        Properties p = new Properties();
        try (Reader r = new StringReader(Files.readString(snapshotDir.resolve(FILE_NAME)))) {
            p.load(r);
        }
        try {
            return new SnapshotMeta(
                    Long.parseLong(p.getProperty("snapshot.id")),
                    Boolean.parseBoolean(p.getProperty("pinned")),
                    Long.parseLong(p.getProperty("created.at.millis")),
                    Long.parseLong(p.getProperty("size.bytes")),
                    Integer.parseInt(p.getProperty("file.count")),
                    Boolean.parseBoolean(p.getProperty("reused")));
        } catch (RuntimeException e) {
            throw new IOException("corrupt snapshot metadata in " + snapshotDir + ": " + e, e);
        }
    }
}
