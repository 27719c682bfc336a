package io.taishan.bloom;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.zip.CRC32C;

/**
 * An off-heap, cache-line-blocked Bloom filter over 64-bit key hashes ({@link KeyHash}): {@link
 * #mightContain} is never false for a hash that was {@link #put} before (see the concurrency notes
 * for what "before" means).
 *
 * <p><b>Layout.</b> The bits are {@link FilterGeometry#numBlocks()} blocks of 512 bits (one 64-byte
 * cache line, aligned). A hash picks its block from its upper 32 bits (multiply-shift, no division)
 * and {@code k} bit positions inside it from 9-bit slices of a remix of all 64 bits (murmur3's
 * finalizer; slices 8 to 16 come from remixes of the hash with a salt). So a put or a lookup
 * touches one cache line, where a classic Bloom filter touches {@code k}; the price is about 4%
 * more bits at 1% (10.0 bits per key instead of 9.6), which {@link FilterSizing} pays. A lookup of
 * an absent hash stops at its first clear bit: about 2 reads on average in a filter at capacity.
 *
 * <p><b>Cost.</b> {@link #sizeBytes()} is {@code numBlocks · 64 + 64} bytes off-heap (the extra
 * block is alignment slack) plus a small object on the heap; at 1% that is about 1.25 bytes per key
 * of capacity. The memory is a direct {@code ByteBuffer}, so it counts against {@code
 * -XX:MaxDirectMemorySize} (in Flink: task off-heap memory), and {@link #close()} frees it at once
 * instead of at some GC. Measured times are in the module README.
 *
 * <p><b>Concurrency.</b> One writer at a time ({@link #put}, {@link #mergeFrom}; successive writers
 * must be ordered by happens-before, e.g. by a lock) and any number of concurrent readers ({@link
 * #mightContain}, {@link #copy}, {@link #writeTo}, the counters). Bits only ever go from 0 to 1,
 * and every 64-bit word is read with opaque and written with release access, so:
 *
 * <ul>
 *   <li>If {@code put(h)} returned and happened-before a read, that read answers true.
 *   <li>A read concurrent with {@code put(h)} may see none, some or all of that put's bits, so it
 *       may answer false for {@code h}; it never sees a bit that no put set.
 *   <li>Once a thread has seen a bit set it keeps seeing it: a thread that got true for {@code h}
 *       gets true again.
 *   <li>{@link #copy} and {@link #writeTo} concurrent with puts produce a filter that contains
 *       every hash put before they began, and any subset of the bits of concurrent puts.
 * </ul>
 *
 * <p>{@link #putConcurrent} is the variant for several writers at once (an atomic OR per word); all
 * writers of a filter must use it while more than one may write, since a plain {@code put}'s
 * read-modify-write could undo a concurrent bit. {@link #close()} must not race with any other use
 * of the filter (the callers in this package guard it with a lock); after it, every method throws
 * {@link IllegalStateException} instead of touching freed memory.
 *
 * <p><b>Serialized form</b> (all integers big-endian except the bit words):
 *
 * <pre>
 * offset  size  field
 *  0      4     magic "TSBF" (0x54534246)
 *  4      2     format version, 1: 512-bit blocks, the bit derivation above, XXH3-64 key hashes
 *  6      2     numHashes
 *  8      4     numBlocks
 * 12      4     CRC32C of bytes 0..11
 * 16      64·B  the blocks, as little-endian 64-bit words
 * 16+64·B 4     CRC32C of the blocks
 * </pre>
 *
 * The bits' checksum trails them so a filter can be streamed while its writer goes on: each chunk
 * is copied once, checksummed and written, and the checksum matches what was written even though
 * the live bits move on. A header checksum keeps a corrupt geometry from allocating gigabytes
 * before the bits' checksum could catch it.
 */
public final class BloomFilter implements AutoCloseable {

    /** "TSBF". */
    static final int MAGIC = 0x54534246;

    static final int FORMAT_VERSION = 1;

    /** Bytes before the bits. */
    static final int HEADER_BYTES = 16;

    /** Bytes after the bits. */
    static final int TRAILER_BYTES = 4;

    private static final int SLICES_PER_MIX = 7;
    private static final int SLICE_BITS = 9;
    private static final int SLICE_MASK = (1 << SLICE_BITS) - 1;
    private static final long SECOND_MIX_SALT = 0x9E3779B97F4A7C15L;
    private static final int IO_CHUNK = 64 * 1024;

    private static final VarHandle WORD =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle BITS_SET;

    static {
        try {
            BITS_SET =
                    MethodHandles.lookup().findVarHandle(BloomFilter.class, "bitsSet", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final FilterGeometry geometry;
    private final int numBlocks;
    private final int numHashes;
    private final int bitsBytes;

    /** What {@code allocateDirect} returned: the only buffer the cleaner accepts. */
    private final ByteBuffer allocation;

    /** The cache-line-aligned view of {@link #allocation}; null once closed. */
    private ByteBuffer bits;

    /** Maintained by the writers (opaque for one, atomic for {@link #putConcurrent}). */
    @SuppressWarnings("unused") // accessed through BITS_SET
    private long bitsSet;

    private BloomFilter(FilterGeometry geometry) {
        this.geometry = geometry;
        this.numBlocks = geometry.numBlocks();
        this.numHashes = geometry.numHashes();
        this.bitsBytes = Math.toIntExact(geometry.bitsBytes());
        this.allocation = ByteBuffer.allocateDirect(bitsBytes + FilterGeometry.BLOCK_BYTES);
        this.bits =
                allocation.alignedSlice(FilterGeometry.BLOCK_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** An empty filter of this geometry (its memory zeroed). */
    public static BloomFilter create(FilterGeometry geometry) {
        return new BloomFilter(geometry);
    }

    /** An empty filter for {@code expectedKeys} at {@code targetFpp}, with no floor or cap. */
    public static BloomFilter create(long expectedKeys, double targetFpp) {
        return create(
                new FilterSizing(
                                targetFpp,
                                1,
                                (long) FilterGeometry.MAX_BLOCKS * FilterGeometry.BLOCK_BYTES)
                        .geometryFor(expectedKeys));
    }

    public FilterGeometry geometry() {
        return geometry;
    }

    public int numBlocks() {
        return numBlocks;
    }

    public int numHashes() {
        return numHashes;
    }

    /** Total bits. */
    public long bitCount() {
        return geometry.bitCount();
    }

    /** Off-heap bytes held: the bits plus one block of alignment slack. */
    public long sizeBytes() {
        return allocation.capacity();
    }

    /** Adds {@code hash}. One writer at a time (see the class comment). */
    public void put(long hash) {
        ByteBuffer b = open();
        int block = blockOffset(hash);
        long slices = mix(hash);
        int added = 0;
        for (int i = 0; i < numHashes; i++) {
            if (i == SLICES_PER_MIX || i == 2 * SLICES_PER_MIX) {
                slices = remix(hash, i);
            }
            int position = (int) slices & SLICE_MASK;
            slices >>>= SLICE_BITS;
            int offset = block + ((position >>> 6) << 3);
            long mask = 1L << position;
            long word = (long) WORD.getOpaque(b, offset);
            if ((word & mask) == 0) {
                WORD.setRelease(b, offset, word | mask);
                added++;
            }
        }
        if (added != 0) {
            BITS_SET.setOpaque(this, (long) BITS_SET.getOpaque(this) + added);
        }
    }

    /**
     * Adds {@code hash} with an atomic OR per word, so any number of threads may call it at once;
     * while they do, no thread may call {@link #put} or {@link #mergeFrom} on this filter.
     */
    public void putConcurrent(long hash) {
        ByteBuffer b = open();
        int block = blockOffset(hash);
        long slices = mix(hash);
        long added = 0;
        for (int i = 0; i < numHashes; i++) {
            if (i == SLICES_PER_MIX || i == 2 * SLICES_PER_MIX) {
                slices = remix(hash, i);
            }
            int position = (int) slices & SLICE_MASK;
            slices >>>= SLICE_BITS;
            int offset = block + ((position >>> 6) << 3);
            long mask = 1L << position;
            if (((long) WORD.getOpaque(b, offset) & mask) == 0) {
                long before = (long) WORD.getAndBitwiseOr(b, offset, mask);
                if ((before & mask) == 0) {
                    added++;
                }
            }
        }
        if (added != 0) {
            BITS_SET.getAndAdd(this, added);
        }
    }

    /**
     * False only if {@code hash} was surely never {@link #put}; true if it was, or by a false
     * positive.
     */
    public boolean mightContain(long hash) {
        ByteBuffer b = open();
        int block = blockOffset(hash);
        long slices = mix(hash);
        for (int i = 0; i < numHashes; i++) {
            if (i == SLICES_PER_MIX || i == 2 * SLICES_PER_MIX) {
                slices = remix(hash, i);
            }
            int position = (int) slices & SLICE_MASK;
            slices >>>= SLICE_BITS;
            long word = (long) WORD.getOpaque(b, block + ((position >>> 6) << 3));
            if ((word & (1L << position)) == 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Bits set, kept up to date by the writers: O(1). Under concurrent writes it may lag the bits
     * by the puts in progress.
     */
    public long bitsSet() {
        open();
        return (long) BITS_SET.getOpaque(this);
    }

    /** {@link #bitsSet()} / {@link #bitCount()}. */
    public double fillRatio() {
        return (double) bitsSet() / bitCount();
    }

    /**
     * The distinct keys this filter most likely holds, from its set bits (a key put twice counts
     * once). Infinite once every bit is set.
     */
    public double estimatedKeys() {
        return geometry.estimateKeys(bitsSet());
    }

    /**
     * The false-positive probability the model expects at {@link #estimatedKeys()}: what a lookup
     * of a random absent hash will see. Costs a few microseconds.
     */
    public double estimatedFpp() {
        double keys = estimatedKeys();
        return Double.isInfinite(keys) ? 1.0 : geometry.expectedFpp(keys);
    }

    /**
     * ORs {@code other}'s bits into this filter, which afterwards contains every hash of both. A
     * write: one writer at a time. {@code other} may be read concurrently by others.
     *
     * @throws IllegalArgumentException if the geometries differ
     */
    public void mergeFrom(BloomFilter other) {
        ByteBuffer b = open();
        if (other == this) {
            return;
        }
        ByteBuffer o = other.open();
        if (!geometry.equals(other.geometry)) {
            throw new IllegalArgumentException(
                    "cannot merge Bloom filters of different geometry: this "
                            + describe(geometry)
                            + ", other "
                            + describe(other.geometry));
        }
        long added = 0;
        for (int offset = 0; offset < bitsBytes; offset += Long.BYTES) {
            long theirs = (long) WORD.getOpaque(o, offset);
            long ours = (long) WORD.getOpaque(b, offset);
            long merged = ours | theirs;
            if (merged != ours) {
                WORD.setRelease(b, offset, merged);
                added += Long.bitCount(merged ^ ours);
            }
        }
        if (added != 0) {
            BITS_SET.setOpaque(this, (long) BITS_SET.getOpaque(this) + added);
        }
    }

    /** An independent filter with the same geometry and bits; the caller closes it. */
    public BloomFilter copy() {
        ByteBuffer b = open();
        BloomFilter copy = new BloomFilter(geometry);
        copy.bits.put(0, b, 0, bitsBytes);
        // Counted from the copied bits, so it matches them even if puts ran during the copy.
        BITS_SET.setOpaque(copy, copy.countBits());
        return copy;
    }

    /** Bytes {@link #writeTo} writes. */
    public long serializedSizeBytes() {
        return HEADER_BYTES + (long) bitsBytes + TRAILER_BYTES;
    }

    /** The serialized form (see the class comment) as one array. */
    public byte[] toByteArray() {
        long size = serializedSizeBytes();
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException(
                    "a " + size + "-byte filter does not fit in a byte[]; use writeTo");
        }
        ByteArrayOutput out = new ByteArrayOutput((int) size);
        try {
            writeTo(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a byte array does not fail
        }
        return out.array;
    }

    /** Writes the serialized form; safe while a writer puts (see the class comment). */
    public void writeTo(OutputStream out) throws IOException {
        ByteBuffer b = open();
        out.write(header(geometry));
        CRC32C crc = new CRC32C();
        byte[] chunk = new byte[Math.min(IO_CHUNK, bitsBytes)];
        for (int offset = 0; offset < bitsBytes; offset += chunk.length) {
            int n = Math.min(chunk.length, bitsBytes - offset);
            b.get(offset, chunk, 0, n);
            crc.update(chunk, 0, n);
            out.write(chunk, 0, n);
        }
        byte[] trailer = new byte[TRAILER_BYTES];
        putInt(trailer, 0, (int) crc.getValue());
        out.write(trailer);
    }

    /** {@link #writeTo(OutputStream)} to a blocking channel. */
    public void writeTo(WritableByteChannel out) throws IOException {
        // No buffering: Channels' stream passes each write straight through, so nothing is left
        // unflushed and the caller's channel position ends right after the trailer.
        writeTo(Channels.newOutputStream(out));
    }

    /** Reads one serialized filter from {@code bytes}, which must hold exactly one. */
    public static BloomFilter fromBytes(byte[] bytes) throws FilterFormatException {
        return fromBytes(bytes, 0, bytes.length);
    }

    /**
     * Reads one serialized filter from {@code bytes[offset, offset + length)}, which must hold
     * exactly one.
     */
    public static BloomFilter fromBytes(byte[] bytes, int offset, int length)
            throws FilterFormatException {
        if (offset < 0 || length < 0 || offset > bytes.length - length) {
            throw new IndexOutOfBoundsException(
                    "range [" + offset + ", " + offset + " + " + length + ") of " + bytes.length);
        }
        if (length >= HEADER_BYTES) {
            FilterGeometry geometry = parseHeader(bytes, offset);
            long expected = HEADER_BYTES + geometry.bitsBytes() + TRAILER_BYTES;
            if (length != expected) {
                throw new FilterFormatException(
                        "a serialized Bloom filter of "
                                + describe(geometry)
                                + " is "
                                + expected
                                + " bytes, got "
                                + length);
            }
        }
        try {
            return readFrom(new java.io.ByteArrayInputStream(bytes, offset, length));
        } catch (FilterFormatException e) {
            throw e;
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a byte array does not fail
        }
    }

    /**
     * Reads exactly one serialized filter from {@code in}, leaving what follows it. The caller
     * closes the returned filter.
     *
     * @throws FilterFormatException if the bytes are not a filter this build can read, are corrupt,
     *     or end early
     */
    public static BloomFilter readFrom(InputStream in) throws IOException {
        DataInputStream data = new DataInputStream(in);
        byte[] header = new byte[HEADER_BYTES];
        readFully(data, header, 0, HEADER_BYTES, 0, -1);
        FilterGeometry geometry = parseHeader(header, 0);
        long total = HEADER_BYTES + geometry.bitsBytes() + TRAILER_BYTES;
        BloomFilter filter = new BloomFilter(geometry);
        boolean loaded = false;
        try {
            CRC32C crc = new CRC32C();
            int bitsBytes = filter.bitsBytes;
            byte[] chunk = new byte[Math.min(IO_CHUNK, bitsBytes)];
            for (int offset = 0; offset < bitsBytes; offset += chunk.length) {
                int n = Math.min(chunk.length, bitsBytes - offset);
                readFully(data, chunk, 0, n, HEADER_BYTES + (long) offset, total);
                crc.update(chunk, 0, n);
                filter.bits.put(offset, chunk, 0, n);
            }
            byte[] trailer = new byte[TRAILER_BYTES];
            readFully(data, trailer, 0, TRAILER_BYTES, HEADER_BYTES + (long) bitsBytes, total);
            int stored = getInt(trailer, 0);
            if (stored != (int) crc.getValue()) {
                throw new FilterFormatException(
                        String.format(
                                "corrupt Bloom filter: checksum of the bits is %08x, the trailer"
                                        + " says %08x",
                                (int) crc.getValue(), stored));
            }
            BITS_SET.setOpaque(filter, filter.countBits());
            loaded = true;
            return filter;
        } finally {
            if (!loaded) {
                filter.close();
            }
        }
    }

    /** {@link #readFrom(InputStream)} from a blocking channel. */
    public static BloomFilter readFrom(ReadableByteChannel in) throws IOException {
        return readFrom(Channels.newInputStream(in));
    }

    /** Frees the bits. Idempotent; must not race with any other use (see the class comment). */
    @Override
    public void close() {
        if (bits != null) {
            bits = null;
            OffHeap.free(allocation);
        }
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return bits == null;
    }

    @Override
    public String toString() {
        ByteBuffer b = bits;
        return "BloomFilter{"
                + describe(geometry)
                + (b == null ? ", closed}" : ", bitsSet=" + (long) BITS_SET.getOpaque(this) + "}");
    }

    private ByteBuffer open() {
        ByteBuffer b = bits;
        if (b == null) {
            throw new IllegalStateException("BloomFilter is closed: " + describe(geometry));
        }
        return b;
    }

    private int blockOffset(long hash) {
        return (int) (((hash >>> 32) * numBlocks) >>> 32) << 6;
    }

    private long countBits() {
        ByteBuffer b = open();
        long count = 0;
        for (int offset = 0; offset < bitsBytes; offset += Long.BYTES) {
            count += Long.bitCount((long) WORD.getOpaque(b, offset));
        }
        return count;
    }

    /**
     * Fresh slices for positions 7 to 13 and 14 to 15, from the hash itself: what is left of the
     * previous slices after seven 9-bit shifts is a single bit.
     */
    private static long remix(long hash, int position) {
        return mix(hash + (position / SLICES_PER_MIX) * SECOND_MIX_SALT);
    }

    /** murmur3's 64-bit finalizer: every input bit affects every output bit. */
    private static long mix(long h) {
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
    }

    static String describe(FilterGeometry geometry) {
        return geometry.numBlocks() + " blocks × " + geometry.numHashes() + " hashes";
    }

    static byte[] header(FilterGeometry geometry) {
        byte[] header = new byte[HEADER_BYTES];
        putInt(header, 0, MAGIC);
        putShort(header, 4, FORMAT_VERSION);
        putShort(header, 6, geometry.numHashes());
        putInt(header, 8, geometry.numBlocks());
        CRC32C crc = new CRC32C();
        crc.update(header, 0, 12);
        putInt(header, 12, (int) crc.getValue());
        return header;
    }

    private static FilterGeometry parseHeader(byte[] bytes, int offset)
            throws FilterFormatException {
        int magic = getInt(bytes, offset);
        if (magic != MAGIC) {
            throw new FilterFormatException(
                    String.format(
                            "not a Taishan Bloom filter: magic %08x, expected %08x (\"TSBF\")",
                            magic, MAGIC));
        }
        int version = getShort(bytes, offset + 4);
        if (version != FORMAT_VERSION) {
            throw new FilterFormatException(
                    "unsupported Bloom filter format version "
                            + version
                            + "; this build reads version "
                            + FORMAT_VERSION);
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, offset, 12);
        int stored = getInt(bytes, offset + 12);
        if (stored != (int) crc.getValue()) {
            throw new FilterFormatException(
                    String.format(
                            "corrupt Bloom filter header: checksum is %08x, the header says %08x",
                            (int) crc.getValue(), stored));
        }
        int numHashes = getShort(bytes, offset + 6);
        int numBlocks = getInt(bytes, offset + 8);
        try {
            return new FilterGeometry(numBlocks, numHashes);
        } catch (IllegalArgumentException e) {
            throw new FilterFormatException("Bloom filter header: " + e.getMessage(), e);
        }
    }

    private static void readFully(
            DataInputStream in, byte[] into, int offset, int length, long position, long total)
            throws IOException {
        try {
            in.readFully(into, offset, length);
        } catch (EOFException e) {
            throw new FilterFormatException(
                    "truncated Bloom filter: input ended within bytes ["
                            + position
                            + ", "
                            + (position + length)
                            + ")"
                            + (total < 0 ? " of the header" : " of " + total),
                    e);
        }
    }

    static void putInt(byte[] b, int offset, int value) {
        b[offset] = (byte) (value >>> 24);
        b[offset + 1] = (byte) (value >>> 16);
        b[offset + 2] = (byte) (value >>> 8);
        b[offset + 3] = (byte) value;
    }

    static int getInt(byte[] b, int offset) {
        return (b[offset] & 0xff) << 24
                | (b[offset + 1] & 0xff) << 16
                | (b[offset + 2] & 0xff) << 8
                | (b[offset + 3] & 0xff);
    }

    private static void putShort(byte[] b, int offset, int value) {
        b[offset] = (byte) (value >>> 8);
        b[offset + 1] = (byte) value;
    }

    private static int getShort(byte[] b, int offset) {
        return (b[offset] & 0xff) << 8 | (b[offset + 1] & 0xff);
    }

    /** A stream into an exactly sized array: no copy at the end. */
    private static final class ByteArrayOutput extends OutputStream {
        final byte[] array;
        int size;

        ByteArrayOutput(int capacity) {
            array = new byte[capacity];
        }

        @Override
        public void write(int b) {
            array[size++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            System.arraycopy(b, off, array, size, len);
            size += len;
        }
    }
}
