package io.taishan.kv.server.storage;

import io.taishan.bloom.FilterFormatException;
import io.taishan.bloom.FilterSizing;
import io.taishan.bloom.RebuildingFilter;
import java.io.BufferedOutputStream;
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
import javax.annotation.Nullable;

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
            // Counted above the buffer: offsets without a flush (a write call) per filter.
            CountingOutput counting =
                    new CountingOutput(
                            new BufferedOutputStream(Channels.newOutputStream(ch), BUFFER));
            DataOutputStream out = new DataOutputStream(counting);
            out.writeInt(MAGIC);
            out.writeInt(VERSION);
            long[] offsets = new long[shards.length];
            long[] lengths = new long[shards.length];
            for (int i = 0; i < shards.length; i++) {
                offsets[i] = counting.count;
                try (FilterCopy copy = copyOf.apply(shards[i])) {
                    copy.snapshot().writeTo(out);
                }
                lengths[i] = counting.count - offsets[i];
            }
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

    /**
     * A bundle opened for reading: its index, and its bytes mapped once for all its filters, so
     * loading the filters of a store of 32,768 shards is one open and one mapping, not one of each
     * per shard (a bundle over 2 GiB, which one mapping cannot hold, maps each filter's region).
     * Close it when done; a mapping already made stays readable until it is collected.
     */
    static final class Reader implements AutoCloseable {
        private final Path file;
        private final FileChannel channel;
        @Nullable private final ByteBuffer whole;
        private final Map<Integer, long[]> offsetAndLength;

        private Reader(
                Path file,
                FileChannel channel,
                @Nullable ByteBuffer whole,
                Map<Integer, long[]> offsetAndLength) {
            this.file = file;
            this.channel = channel;
            this.whole = whole;
            this.offsetAndLength = offsetAndLength;
        }

        Path file() {
            return file;
        }

        boolean contains(int shard) {
            return offsetAndLength.containsKey(shard);
        }

        /** The bytes of {@code shard}'s filter in the file, or 0 if it has none. */
        long length(int shard) {
            long[] at = offsetAndLength.get(shard);
            return at == null ? 0 : at[1];
        }

        /**
         * Loads one shard's filter; the caller closes it.
         *
         * @throws FilterFormatException if that part of the file is not exactly one readable filter
         */
        RebuildingFilter read(int shard, FilterSizing sizing) throws IOException {
            long[] at = offsetAndLength.get(shard);
            if (at == null) {
                throw new FilterFormatException("no filter of shard " + shard + " in " + file);
            }
            if (at[1] > Integer.MAX_VALUE) {
                throw new FilterFormatException(
                        "the filter of shard " + shard + " in " + file + " exceeds 2 GiB");
            }
            ByteBuffer slice =
                    whole != null
                            ? whole.slice((int) at[0], (int) at[1])
                            : channel.map(FileChannel.MapMode.READ_ONLY, at[0], at[1]);
            RebuildingFilter filter = RebuildingFilter.readFrom(sizing, new SliceInput(slice));
            if (slice.hasRemaining()) {
                filter.close();
                throw new FilterFormatException(
                        "bytes after the filter of shard " + shard + " in " + file);
            }
            return filter;
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /**
     * Opens a bundle for reading.
     *
     * @throws FilterFormatException if its footer or index is not valid
     */
    static Reader open(Path file) throws IOException {
        FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
        try {
            long size = ch.size();
            if (size < HEADER_BYTES + FOOTER_BYTES) {
                throw new FilterFormatException("filter bundle " + file + " is truncated");
            }
            ByteBuffer footer =
                    ch.map(FileChannel.MapMode.READ_ONLY, size - FOOTER_BYTES, FOOTER_BYTES);
            long indexOffset = footer.getLong();
            if (footer.getInt() != MAGIC
                    || indexOffset < HEADER_BYTES
                    || indexOffset > size - FOOTER_BYTES) {
                throw new FilterFormatException("filter bundle " + file + " has no valid footer");
            }
            long indexBytes = size - FOOTER_BYTES - indexOffset;
            if (indexBytes < 4 || indexBytes > Integer.MAX_VALUE) {
                throw new FilterFormatException("filter bundle " + file + " has a bad index");
            }
            ByteBuffer index = ch.map(FileChannel.MapMode.READ_ONLY, indexOffset, indexBytes);
            int count = index.getInt();
            if (count < 0 || index.remaining() != count * 20L) {
                throw new FilterFormatException("filter bundle " + file + " has a bad index");
            }
            Map<Integer, long[]> entries = new HashMap<>(count * 2);
            for (int i = 0; i < count; i++) {
                int shard = index.getInt();
                long offset = index.getLong();
                long length = index.getLong();
                if (offset < HEADER_BYTES || length < 0 || offset + length > indexOffset) {
                    throw new FilterFormatException(
                            "filter bundle " + file + ": shard " + shard + " out of bounds");
                }
                entries.put(shard, new long[] {offset, length});
            }
            ByteBuffer whole =
                    indexOffset <= Integer.MAX_VALUE
                            ? ch.map(FileChannel.MapMode.READ_ONLY, 0, indexOffset)
                            : null;
            return new Reader(file, ch, whole, entries);
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** An input stream over a buffer's remaining bytes, consuming them. */
    private static final class SliceInput extends InputStream {
        private final ByteBuffer slice;

        SliceInput(ByteBuffer slice) {
            this.slice = slice;
        }

        @Override
        public int read() {
            return slice.hasRemaining() ? slice.get() & 0xff : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            if (!slice.hasRemaining()) {
                return -1;
            }
            int n = Math.min(len, slice.remaining());
            slice.get(b, off, n);
            return n;
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
}
