package io.taishan.kv.server.durable;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.zip.CRC32C;

/**
 * Where the copies of a store's files are in checkpoint storage: the sidecar kept beside a cut (or
 * a store forked from one), written from an upload's or a download's files, read by the next upload
 * of the same store to offer those copies for reuse.
 *
 * <p>The reuse rule is Flink's RocksDB backend's: a copy may be referenced only if it belongs to
 * the last checkpoint Flink confirmed ({@code notifyCheckpointComplete}), because Flink deletes the
 * files of checkpoints it subsumed or aborted. This class knows the copies; the caller knows which
 * are allowed, and {@link #reusable} keeps only those. A copy not allowed is uploaded again, under
 * a new name: never a reference to a file that may be gone.
 *
 * <p>Keyed by file name within one store ({@link FileIdentity} says why that identifies the bytes).
 * A store forked from a cut links the cut's files under the same names and has the same bytes, so
 * its first sidecar is the cut's {@link #forStore re-keyed} to the fork's id.
 *
 * <p>A file may have several copies: a cut uploaded again without reuse (a savepoint, or the full
 * checkpoint after a restore) gets new ones, and which of them the next checkpoint may reference is
 * the caller's to say: after a savepoint, still the earlier checkpoint's; after a full checkpoint,
 * the new ones. So a record {@link #after} an earlier one keeps both, newest first, at most {@value
 * #COPIES_KEPT} per file (copies older than that belong to checkpoints Flink has long subsumed).
 *
 * <p>On disk ({@value #FILE_NAME}, written to a temporary name, fsynced and renamed): magic {@code
 * TSDO}, version 2, the store id, the count, then per file its name, the number of its copies and
 * per copy its remote path, size and CRC32C ({@code DataOutputStream} encoding), and the CRC32C of
 * all that. Version 1 (one copy per file, no count) still reads.
 */
public final class FileOrigins {
    /** Not a RocksDB file name: RocksDB neither reads nor deletes it. */
    public static final String FILE_NAME = "TAISHAN-DURABLE-ORIGINS";

    /** Copies kept per file by {@link #after}. */
    public static final int COPIES_KEPT = 3;

    private static final int MAGIC = 0x5453444F; // "TSDO"
    private static final int VERSION = 2;

    private final String storeId;

    /** Per local file name its copies, newest first, never empty. */
    private final Map<String, List<RemoteFile>> byFileName;

    private FileOrigins(String storeId, Map<String, List<RemoteFile>> byFileName) {
        this.storeId = Objects.requireNonNull(storeId, "storeId");
        this.byFileName = byFileName;
    }

    /** The copies of {@code files} of store {@code storeId}. */
    public static FileOrigins of(String storeId, Collection<CutFile> files) {
        Map<String, List<RemoteFile>> map = new LinkedHashMap<>();
        for (CutFile file : files) {
            map.put(file.fileName(), List.of(file.remote()));
        }
        return new FileOrigins(storeId, map);
    }

    /** The same copies, for a store forked from this one's cut (same files, same names). */
    public FileOrigins forStore(String forkStoreId) {
        return new FileOrigins(forkStoreId, byFileName);
    }

    /**
     * These copies, then those {@code earlier} recorded for the same files of the same store, at
     * most {@value #COPIES_KEPT} per file, newest first (see the class doc). Files this record does
     * not name are not taken over; an earlier record of another store is ignored.
     */
    public FileOrigins after(FileOrigins earlier) {
        if (!earlier.storeId.equals(storeId)) {
            return this;
        }
        Map<String, List<RemoteFile>> map = new LinkedHashMap<>();
        byFileName.forEach(
                (name, copies) -> {
                    List<RemoteFile> merged = new ArrayList<>(copies);
                    for (RemoteFile old : earlier.byFileName.getOrDefault(name, List.of())) {
                        if (merged.size() < COPIES_KEPT && !merged.contains(old)) {
                            merged.add(old);
                        }
                    }
                    map.put(name, List.copyOf(merged));
                });
        return new FileOrigins(storeId, map);
    }

    public String storeId() {
        return storeId;
    }

    /** Local file name to its newest copy. */
    public Map<String, RemoteFile> byFileName() {
        Map<String, RemoteFile> newest = new LinkedHashMap<>();
        byFileName.forEach((name, copies) -> newest.put(name, copies.get(0)));
        return newest;
    }

    /** Local file name to every copy kept, newest first. */
    public Map<String, List<RemoteFile>> copiesByFileName() {
        return Map.copyOf(byFileName);
    }

    /**
     * The copies an upload may reference ({@link UploadRequest#reusable()}): per file the newest
     * copy whose remote path {@code allowed} accepts (the files of the last checkpoint Flink
     * confirmed).
     */
    public Map<FileIdentity, RemoteFile> reusable(Predicate<String> allowed) {
        Map<FileIdentity, RemoteFile> map = new LinkedHashMap<>();
        byFileName.forEach(
                (name, copies) -> {
                    for (RemoteFile remote : copies) {
                        if (allowed.test(remote.path())) {
                            map.put(new FileIdentity(storeId, name, remote.sizeBytes()), remote);
                            return;
                        }
                    }
                });
        return map;
    }

    /** Writes {@value #FILE_NAME} into {@code dir} so that a crash leaves the old file or this. */
    public void writeTo(Path dir) throws IOException {
        byte[] content = toBytes();
        Path file = dir.resolve(FILE_NAME);
        Path tmp = dir.resolve(FILE_NAME + ".tmp");
        try (FileChannel out =
                FileChannel.open(
                        tmp,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE,
                        StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                out.write(buffer);
            }
            out.force(true);
        }
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
        try (FileChannel parent = FileChannel.open(dir, StandardOpenOption.READ)) {
            parent.force(true);
        }
    }

    /**
     * The sidecar of {@code dir}, if it has one.
     *
     * @throws IOException when it cannot be read or is corrupt (then nothing can be reused: the
     *     caller uploads every file again)
     */
    public static Optional<FileOrigins> readFrom(Path dir) throws IOException {
        Path file = dir.resolve(FILE_NAME);
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
        try {
            if (bytes.length < 4) {
                throw new IOException("too short");
            }
            CRC32C crc = new CRC32C();
            crc.update(bytes, 0, bytes.length - 4);
            int recorded = ByteBuffer.wrap(bytes, bytes.length - 4, 4).getInt();
            if (recorded != (int) crc.getValue()) {
                throw new IOException("CRC32C mismatch");
            }
            DataInputStream in =
                    new DataInputStream(new ByteArrayInputStream(bytes, 0, bytes.length - 4));
            int version = in.readInt() == MAGIC ? in.readInt() : -1;
            if (version != 1 && version != VERSION) {
                throw new IOException("not a file origins record");
            }
            String storeId = in.readUTF();
            int count = in.readInt();
            Map<String, List<RemoteFile>> map = new LinkedHashMap<>();
            for (int i = 0; i < count; i++) {
                String name = in.readUTF();
                int copies = version == 1 ? 1 : in.readInt();
                if (copies < 1 || copies > COPIES_KEPT) {
                    throw new IOException("bad copy count " + copies + " of " + name);
                }
                List<RemoteFile> list = new ArrayList<>(copies);
                for (int c = 0; c < copies; c++) {
                    list.add(new RemoteFile(in.readUTF(), in.readLong(), in.readInt()));
                }
                map.put(name, List.copyOf(list));
            }
            return Optional.of(new FileOrigins(storeId, map));
        } catch (IOException | IllegalArgumentException e) {
            throw new IOException("corrupt " + file + ": " + e.getMessage(), e);
        }
    }

    private byte[] toBytes() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            out.writeUTF(storeId);
            out.writeInt(byFileName.size());
            for (Map.Entry<String, List<RemoteFile>> e : byFileName.entrySet()) {
                out.writeUTF(e.getKey());
                out.writeInt(e.getValue().size());
                for (RemoteFile copy : e.getValue()) {
                    out.writeUTF(copy.path());
                    out.writeLong(copy.sizeBytes());
                    out.writeInt(copy.crc32c());
                }
            }
            CRC32C crc = new CRC32C();
            crc.update(bytes.toByteArray());
            out.writeInt((int) crc.getValue());
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return bytes.toByteArray();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof FileOrigins other
                && storeId.equals(other.storeId)
                && byFileName.equals(other.byFileName);
    }

    @Override
    public int hashCode() {
        return Objects.hash(storeId, byFileName);
    }

    @Override
    public String toString() {
        return "FileOrigins{store " + storeId + ", " + byFileName.size() + " file(s)}";
    }
}
