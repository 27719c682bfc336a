package io.taishan.kv.server.storage;

import io.taishan.bloom.FilterFormatException;
import io.taishan.bloom.FilterSizing;
import io.taishan.bloom.RebuildingFilter;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * The filters of several shards in one file: {@value #LIVE_FILE_NAME} in a store's live directory
 * (written at a clean close, covering every member) or {@value #CUT_FILE_NAME} in a cut (the
 * members whose filter changed since the store's previous cut). One file per store or cut, not per
 * shard: a store of 32,768 key groups saves and loads its filters with one file's I/O.
 *
 * <p>Layout: {@code [magic "TSFB"][version]}, then each filter in {@link
 * RebuildingFilter.Snapshot#writeTo}'s form (with its own checksums), then the index {@code
 * [count]{[shard][offset][length]}} and a footer {@code [index offset][magic]}. Never rewritten in
 * place (a new one is renamed over, a stale one unlinked), so hard links between a cut and a store
 * forked from it stay independent.
 */
final class FilterBundle {
    static final String LIVE_FILE_NAME = "TAISHAN-FILTERS";
    static final String CUT_FILE_NAME = "TAISHAN-CUT-FILTERS";

    private static final int MAGIC = 0x54534642; // "TSFB"
    private static final int VERSION = 1;
    private static final int HEADER_BYTES = 8;
    private static final int FOOTER_BYTES = 12;
    private static final int BUFFER = 1 << 16;

    private FilterBundle() {}

    /**
     * Writes the filters of {@code shards} to {@code target} (created new) and fsyncs it. Each
     * shard's copy is taken by {@code copyOf} just before it is written and closed right after, so
     * at most one copy exists at a time.
     */
    static void write(Path target, int[] shards, IntFunction<FilterCopy> copyOf)
            throws IOException {
        try (FileChannel ch =
                FileChannel.open(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            CountingOutput counting = new CountingOutput(Channels.newOutputStream(ch));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(counting, BUFFER));
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            long[] offsets = new long[shards.length];
            long[] lengths = new long[shards.length];
            for (int i = 0; i < shards.length; i++) {
                out.flush();
                offsets[i] = counting.count;
                try (FilterCopy copy = copyOf.apply(shards[i])) {
                    copy.snapshot().writeTo(out);
                }
                out.flush();
                lengths[i] = counting.count - offsets[i];
            }
            out.flush();
            long indexOffset = counting.count;
            out.writeInt(shards.length);
            for (int i = 0; i < shards.length; i++) {
                out.writeInt(shards[i]);
                out.writeLong(offsets[i]);
                out.writeLong(lengths[i]);
            }
            out.writeLong(indexOffset);
            out.writeInt(MAGIC);
            out.flush();
            ch.force(true);
        }
    }

    /** Where each shard's filter is in a bundle. */
    record Index(Map<Integer, long[]> offsetAndLength) {
        boolean contains(int shard) {
            return offsetAndLength.containsKey(shard);
        }
    }

    static Index readIndex(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < HEADER_BYTES + FOOTER_BYTES) {
                throw new FilterFormatException("filter bundle " + file + " is truncated");
            }
            ByteBuffer footer = ByteBuffer.allocate(FOOTER_BYTES);
            readFully(ch, footer, size - FOOTER_BYTES);
            footer.flip();
            long indexOffset = footer.getLong();
            if (footer.getInt() != MAGIC || indexOffset < HEADER_BYTES || indexOffset > size) {
                throw new FilterFormatException("filter bundle " + file + " has no valid footer");
            }
            ByteBuffer index = ByteBuffer.allocate((int) (size - FOOTER_BYTES - indexOffset));
            readFully(ch, index, indexOffset);
            index.flip();
            int count = index.getInt();
            if (count < 0 || index.remaining() != count * 20L) {
                throw new FilterFormatException("filter bundle " + file + " has a bad index");
            }
            Map<Integer, long[]> entries = new HashMap<>(count * 2);
            for (int i = 0; i < count; i++) {
                int shard = index.getInt();
                long offset = index.getLong();
                long length = index.getLong();
                if (offset < HEADER_BYTES || offset + length > indexOffset) {
                    throw new FilterFormatException(
                            "filter bundle " + file + ": shard " + shard + " out of bounds");
                }
                entries.put(shard, new long[] {offset, length});
            }
            return new Index(entries);
        }
    }

    /**
     * Loads one shard's filter; the caller closes it.
     *
     * @throws FilterFormatException if that part of the file is not exactly one readable filter
     */
    static RebuildingFilter read(Path file, Index index, int shard, FilterSizing sizing)
            throws IOException {
        long[] at = index.offsetAndLength().get(shard);
        if (at == null) {
            throw new FilterFormatException("no filter of shard " + shard + " in " + file);
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ch.position(at[0]);
            InputStream bounded = new BoundedInput(Channels.newInputStream(ch), at[1]);
            DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(bounded));
            RebuildingFilter filter = RebuildingFilter.readFrom(sizing, in);
            if (in.read() != -1) {
                filter.close();
                throw new FilterFormatException(
                        "bytes after the filter of shard " + shard + " in " + file);
            }
            return filter;
        }
    }

    private static void readFully(FileChannel ch, ByteBuffer into, long position)
            throws IOException {
        while (into.hasRemaining()) {
            int n = ch.read(into, position);
            if (n < 0) {
                throw new FilterFormatException("unexpected end of filter bundle");
            }
            position += n;
        }
    }

    private static final class CountingOutput extends OutputStream {
        private final OutputStream out;
        long count;

        CountingOutput(OutputStream out) {
            this.out = out;
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count += len;
        }

        @Override
        public void flush() throws IOException {
            out.flush();
        }
    }

    private static final class BoundedInput extends InputStream {
        private final InputStream in;
        private long left;

        BoundedInput(InputStream in, long left) {
            this.in = in;
            this.left = left;
        }

        @Override
        public int read() throws IOException {
            if (left <= 0) {
                return -1;
            }
            int b = in.read();
            if (b >= 0) {
                left--;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (left <= 0) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n > 0) {
                left -= n;
            }
            return n;
        }
    }
}
