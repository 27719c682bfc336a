package io.taishan.kv.server.durable;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.zip.CRC32C;

/**
 * A cut's small files (MANIFEST, CURRENT, OPTIONS, the server's own records) as one object in
 * checkpoint storage: one PUT per cut instead of one per file. Object stores charge and throttle by
 * request (S3: some 3,500 PUTs per second per prefix, then 503 SlowDown), these files are a few
 * KiB, and every cut has a new set of them, so a node checkpointing hundreds of stores each second
 * would otherwise spend most of its requests on them.
 *
 * <p>The format, big-endian, written and read in one pass (no index to seek to, so it streams to
 * and from any file system):
 *
 * <pre>
 * pack  = magic "TSPK" (4 bytes), version (1 byte, 1), entry*, end
 * entry = name length (2 bytes, 1..1024), name (UTF-8, a plain file name),
 *         size (8 bytes), the file's bytes, CRC32C of those bytes (4 bytes)
 * end   = name length 0 (2 bytes), nothing after it
 * </pre>
 *
 * Not a zip, to have nothing to configure and one checksum everywhere (a zip's is CRC32); no
 * compression, for files of a few KiB. The whole object's CRC32C is checked when it is downloaded;
 * each entry's own CRC32C names the file that is corrupt.
 */
final class MetadataPack {
    static final int MAGIC = 0x5453504B; // "TSPK"
    static final int VERSION = 1;
    static final int MAX_NAME_BYTES = 1024;

    private static final int BUFFER_BYTES = 64 << 10;

    /** A pack that is not one, or not the one recorded. */
    static final class FormatException extends IOException {
        private static final long serialVersionUID = 1L;

        FormatException(String message) {
            super(message);
        }
    }

    private MetadataPack() {}

    /**
     * Writes the files {@code names} of {@code dir} to {@code out} as a pack; does not close {@code
     * out}. An {@code IOException} from reading a file passes through as it is; so does one from
     * {@code out}.
     */
    static void write(Path dir, List<String> names, OutputStream out) throws IOException {
        DataOutputStream data = new DataOutputStream(new BufferedOutputStream(out, BUFFER_BYTES));
        data.writeInt(MAGIC);
        data.writeByte(VERSION);
        byte[] buffer = new byte[BUFFER_BYTES];
        for (String name : names) {
            byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
            if (nameBytes.length > MAX_NAME_BYTES) {
                throw new IllegalArgumentException("file name too long for a pack: " + name);
            }
            Path file = dir.resolve(name);
            try (InputStream in = Files.newInputStream(file)) {
                long size = Files.size(file);
                data.writeShort(nameBytes.length);
                data.write(nameBytes);
                data.writeLong(size);
                CRC32C crc = new CRC32C();
                long left = size;
                while (left > 0) {
                    int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
                    if (n < 0) {
                        throw new IOException(file + " shrank while it was packed");
                    }
                    crc.update(buffer, 0, n);
                    data.write(buffer, 0, n);
                    left -= n;
                }
                if (in.read() >= 0) {
                    throw new IOException(file + " grew while it was packed");
                }
                data.writeInt((int) crc.getValue());
            }
        }
        data.writeShort(0);
        data.flush();
    }

    /**
     * Reads a pack from {@code in} into {@code dir}, each file written, checked against its CRC32C
     * and fsynced; returns their names in pack order. Reads {@code in} to its end: bytes after the
     * pack's end are a {@link FormatException} too.
     *
     * @param reserved names the pack must not hold (the files downloaded beside it)
     * @throws FormatException when the bytes are not a pack, or a file's CRC32C is not its bytes'
     * @throws IOException from {@code in} or from writing {@code dir}, as they are
     */
    static List<String> unpack(InputStream in, Path dir, Set<String> reserved) throws IOException {
        DataInputStream data = new DataInputStream(new BufferedInputStream(in, BUFFER_BYTES));
        try {
            int magic = data.readInt();
            int version = data.readUnsignedByte();
            if (magic != MAGIC) {
                throw new FormatException(
                        String.format("not a Taishan metadata pack (magic %08x)", magic));
            }
            if (version != VERSION) {
                throw new FormatException("metadata pack version " + version + ", not " + VERSION);
            }
            List<String> names = new ArrayList<>();
            Set<String> seen = new HashSet<>();
            byte[] buffer = new byte[BUFFER_BYTES];
            for (int length = data.readUnsignedShort();
                    length != 0;
                    length = data.readUnsignedShort()) {
                String name = readName(data, length);
                if (reserved.contains(name) || !seen.add(name)) {
                    throw new FormatException("metadata pack holds '" + name + "' twice");
                }
                long size = data.readLong();
                if (size < 0) {
                    throw new FormatException("metadata pack entry '" + name + "' of size " + size);
                }
                unpackFile(data, dir.resolve(name), size, buffer);
                names.add(name);
            }
            if (data.read() >= 0) {
                throw new FormatException("bytes after the end of the metadata pack");
            }
            return names;
        } catch (EOFException e) {
            throw new FormatException("metadata pack ends early");
        }
    }

    private static String readName(DataInputStream data, int length) throws IOException {
        if (length > MAX_NAME_BYTES) {
            throw new FormatException("metadata pack entry name of " + length + " bytes");
        }
        byte[] bytes = new byte[length];
        data.readFully(bytes);
        String name = new String(bytes, StandardCharsets.UTF_8);
        try {
            return CutFile.checkFileName(name);
        } catch (IllegalArgumentException e) {
            throw new FormatException("metadata pack entry " + e.getMessage());
        }
    }

    private static void unpackFile(DataInputStream data, Path file, long size, byte[] buffer)
            throws IOException {
        CRC32C crc = new CRC32C();
        try (FileChannel out =
                FileChannel.open(
                        file,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE,
                        StandardOpenOption.TRUNCATE_EXISTING)) {
            long left = size;
            while (left > 0) {
                int n = (int) Math.min(buffer.length, left);
                data.readFully(buffer, 0, n);
                crc.update(buffer, 0, n);
                ByteBuffer chunk = ByteBuffer.wrap(buffer, 0, n);
                while (chunk.hasRemaining()) {
                    out.write(chunk);
                }
                left -= n;
            }
            int recorded = data.readInt();
            if (recorded != (int) crc.getValue()) {
                throw new FormatException(
                        String.format(
                                "metadata pack entry '%s' has CRC32C %08x, the pack says %08x",
                                file.getFileName(), (int) crc.getValue(), recorded));
            }
            out.force(true);
        }
    }
}
