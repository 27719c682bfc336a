package io.taishan.bloom;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.StampedLock;
import java.util.zip.CRC32C;

/**
 * The kv-server's filter of one live shard: every key the shard holds is in it, and it is rebuilt
 * from the shard's actual keys when churn has filled it (the rule is {@link FilterSizing}'s), so
 * deleted and expired keys stop costing false positives.
 *
 * <p><b>The one invariant</b>: at any moment the current filter contains every key that is live in
 * the shard at that moment. It holds if the server keeps to three rules:
 *
 * <ol>
 *   <li>{@link #insert} the store key's hash of every put and merge after the write is applied to
 *       the store (visible to a snapshot taken afterwards) and before it is acknowledged. Deletes
 *       are not reported; they leave a false positive until the next rebuild.
 *   <li>For a rebuild, call {@link #beginRebuild} first, then open the store snapshot or iterator
 *       whose keys are fed to {@link Rebuild#add}: every key written before {@code beginRebuild} is
 *       then in the scan, and every key inserted after it goes into the new filter too.
 *   <li>A shard snapshot saves the {@link #snapshot()} taken at the same point of the shard's write
 *       sequence as the store's checkpoint (after the writes before the marker, before any write
 *       after it). A copy taken later could come from a rebuild whose scan no longer sees a key
 *       deleted after the marker, and restoring that snapshot would then give a false negative.
 * </ol>
 *
 * <p><b>Versions.</b> {@link #version()} goes up by one at every finished rebuild (it is kept in
 * the serialized form); a client copy compares it to decide when to fetch again. A copy of an older
 * version is still correct, only less precise: it contains every key its source did.
 *
 * <p><b>Concurrency.</b> {@link #insert} is called by the shard's writer, one thread at a time
 * (successive writer threads ordered by happens-before, as a shard's write path already is). The
 * scan feeds {@link Rebuild#add} from one background thread. {@link #mightContain}, {@link
 * #snapshot()}, {@link #writeTo}, {@link #needsRebuild()} and the counters may be called from any
 * thread. A {@link StampedLock} separates the two kinds of operation: everything that uses a filter
 * holds its read lock (shared, so inserts, lookups and the scan run in parallel), and only swapping
 * or freeing a filter ({@link #beginRebuild}, {@link Rebuild#finish()}, {@link Rebuild#abort()},
 * {@link #close()}) takes the write lock, so no thread ever reads freed memory. During a rebuild
 * the writer and the scanner both write the new filter, with {@link BloomFilter#putConcurrent};
 * after the swap only the writer does, with the plain put.
 *
 * <p><b>Cost.</b> An insert is a plain put plus an uncontended read-lock acquire and release and an
 * atomic increment (about 30 ns); during a rebuild it also does an atomic put into the new filter.
 * {@link #snapshot()} copies the bits under the read lock (memory bandwidth: about a millisecond
 * per 10 MB), so that serializing and sending them never holds up a swap or a write. Memory is one
 * filter, two while a rebuild runs.
 */
public final class RebuildingFilter implements AutoCloseable {

    /** "TSRF". */
    static final int MAGIC = 0x54535246;

    static final int FORMAT_VERSION = 1;

    /** magic, version, reserved, version, insertsSinceBuild, liveKeysAtBuild, keysAtBuild, crc. */
    static final int HEADER_BYTES = 4 + 2 + 2 + 8 + 8 + 8 + 8 + 4;

    private final FilterSizing sizing;
    private final StampedLock lock = new StampedLock();
    private final AtomicLong insertsSinceBuild;

    // Guarded by lock: read under the read lock, replaced under the write lock.
    private BloomFilter current;
    private Rebuild rebuild;
    private boolean closed;
    private long liveKeysAtBuild;
    private double keysAtBuild;

    private volatile long version;
    private volatile long rebuildThresholdBits;

    private RebuildingFilter(
            FilterSizing sizing,
            BloomFilter filter,
            long version,
            long insertsSinceBuild,
            long liveKeysAtBuild,
            double keysAtBuild) {
        this.sizing = sizing;
        this.current = filter;
        this.version = version;
        this.insertsSinceBuild = new AtomicLong(insertsSinceBuild);
        this.liveKeysAtBuild = liveKeysAtBuild;
        this.keysAtBuild = keysAtBuild;
        this.rebuildThresholdBits = sizing.rebuildThresholdBits(filter.geometry(), keysAtBuild);
    }

    /** The filter of a new, empty shard: complete from the start, sized at the floor. */
    public static RebuildingFilter createEmpty(FilterSizing sizing) {
        return createEmpty(sizing, sizing.geometryForLiveKeys(0));
    }

    /**
     * The filter of a new, empty shard with bits of {@code geometry} (at least the floor's): a
     * shard expected to grow is spared the first rebuilds.
     */
    public static RebuildingFilter createEmpty(FilterSizing sizing, FilterGeometry geometry) {
        return new RebuildingFilter(sizing, BloomFilter.create(geometry), 0, 0, 0, 0);
    }

    /** Adds the hash of a key the shard now holds (rule 1 of the class comment). Writer thread. */
    public void insert(long hash) {
        long stamp = lock.readLock();
        try {
            checkOpen();
            current.put(hash);
            Rebuild running = rebuild;
            if (running != null) {
                running.next.putConcurrent(hash);
            }
            insertsSinceBuild.incrementAndGet();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** False only if the shard surely does not hold a key with this hash. Any thread. */
    public boolean mightContain(long hash) {
        long stamp = lock.readLock();
        try {
            checkOpen();
            return current.mightContain(hash);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Whether a rebuild is due ({@link FilterSizing}'s rule) and none is running. O(1). */
    public boolean needsRebuild() {
        long stamp = lock.readLock();
        try {
            checkOpen();
            return rebuild == null && current.bitsSet() >= rebuildThresholdBits;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /**
     * Starts a rebuild: from now on inserts also go into the new filter. Then open the store
     * snapshot to scan (rule 2 of the class comment), feed every key's hash to {@link Rebuild#add},
     * and {@link Rebuild#finish()} or {@link Rebuild#abort()}.
     *
     * <p>The new filter is sized by {@link FilterSizing#geometryForLiveKeys} for the larger of
     * {@code expectedLiveKeys} (the store's estimate, which may be low) and the keys the last
     * rebuild actually scanned, so a low estimate can under-size at most one build.
     *
     * @throws IllegalStateException if a rebuild is already running, or this is closed
     */
    public Rebuild beginRebuild(long expectedLiveKeys) {
        long stamp = lock.readLock();
        long sizeFor;
        try {
            checkOpen();
            checkNoRebuild();
            sizeFor = Math.max(expectedLiveKeys, liveKeysAtBuild);
        } finally {
            lock.unlockRead(stamp);
        }
        // Sized and zeroed outside the write lock: that can take milliseconds for a large filter.
        BloomFilter next = BloomFilter.create(sizing.geometryForLiveKeys(sizeFor));
        stamp = lock.writeLock();
        try {
            checkOpen();
            checkNoRebuild();
            rebuild = new Rebuild(next, insertsSinceBuild.get());
            return rebuild;
        } catch (RuntimeException e) {
            next.close();
            throw e;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Whether a rebuild is running. */
    public boolean isRebuilding() {
        long stamp = lock.readLock();
        try {
            return rebuild != null;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Goes up by one at every finished rebuild. */
    public long version() {
        return version;
    }

    /** Inserts since the current filter's rebuild began (or since it was created). */
    public long insertsSinceBuild() {
        return insertsSinceBuild.get();
    }

    /** Keys the scan of the current filter's build fed in (0 for a filter never rebuilt). */
    public long liveKeysAtBuild() {
        long stamp = lock.readLock();
        try {
            return liveKeysAtBuild;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** The current filter's geometry. */
    public FilterGeometry geometry() {
        long stamp = lock.readLock();
        try {
            checkOpen();
            return current.geometry();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** {@link BloomFilter#estimatedFpp()} of the current filter. */
    public double estimatedFpp() {
        long stamp = lock.readLock();
        try {
            checkOpen();
            return current.estimatedFpp();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Off-heap bytes: the current filter, plus the new one while a rebuild runs. */
    public long sizeBytes() {
        long stamp = lock.readLock();
        try {
            if (closed) {
                return 0;
            }
            return current.sizeBytes() + (rebuild == null ? 0 : rebuild.next.sizeBytes());
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /**
     * A copy of the current filter with its version and build counters, owned by the caller: what a
     * shard snapshot saves (rule 3 of the class comment) and what a client fetch sends. Any thread;
     * inserts concurrent with the copy may or may not be in it.
     */
    public Snapshot snapshot() {
        long stamp = lock.readLock();
        try {
            checkOpen();
            return new Snapshot(
                    current.copy(), version, insertsSinceBuild.get(), liveKeysAtBuild, keysAtBuild);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Writes {@link #snapshot()} in the form {@link #readFrom} loads. */
    public void writeTo(OutputStream out) throws IOException {
        try (Snapshot snapshot = snapshot()) {
            snapshot.writeTo(out);
        }
    }

    /** Writes {@link #snapshot()} to a blocking channel. */
    public void writeTo(WritableByteChannel out) throws IOException {
        writeTo(Channels.newOutputStream(out));
    }

    /**
     * Loads what {@link Snapshot#writeTo} wrote (restore or clone of a shard snapshot): the filter
     * with its version and counters, to be rebuilt by {@code sizing}'s rule. Reads exactly the
     * serialized bytes.
     *
     * @throws FilterFormatException if the bytes are not a shard filter this build can read, are
     *     corrupt, or end early
     */
    public static RebuildingFilter readFrom(FilterSizing sizing, InputStream in)
            throws IOException {
        DataInputStream data = new DataInputStream(in);
        byte[] header = new byte[HEADER_BYTES];
        try {
            data.readFully(header);
        } catch (EOFException e) {
            throw new FilterFormatException(
                    "truncated shard filter: input ended within its "
                            + HEADER_BYTES
                            + "-byte header",
                    e);
        }
        int magic = BloomFilter.getInt(header, 0);
        if (magic != MAGIC) {
            throw new FilterFormatException(
                    String.format(
                            "not a Taishan shard filter: magic %08x, expected %08x (\"TSRF\")",
                            magic, MAGIC));
        }
        int format = (header[4] & 0xff) << 8 | (header[5] & 0xff);
        if (format != FORMAT_VERSION) {
            throw new FilterFormatException(
                    "unsupported shard filter format version "
                            + format
                            + "; this build reads version "
                            + FORMAT_VERSION);
        }
        CRC32C crc = new CRC32C();
        crc.update(header, 0, HEADER_BYTES - 4);
        int stored = BloomFilter.getInt(header, HEADER_BYTES - 4);
        if (stored != (int) crc.getValue()) {
            throw new FilterFormatException(
                    String.format(
                            "corrupt shard filter header: checksum is %08x, the header says %08x",
                            (int) crc.getValue(), stored));
        }
        long version = getLong(header, 8);
        long inserts = getLong(header, 16);
        long liveKeys = getLong(header, 24);
        double keysAtBuild = Double.longBitsToDouble(getLong(header, 32));
        BloomFilter filter = BloomFilter.readFrom(data);
        return new RebuildingFilter(sizing, filter, version, inserts, liveKeys, keysAtBuild);
    }

    /** {@link #readFrom(FilterSizing, InputStream)} from a blocking channel. */
    public static RebuildingFilter readFrom(FilterSizing sizing, ReadableByteChannel in)
            throws IOException {
        return readFrom(sizing, Channels.newInputStream(in));
    }

    /** Frees both filters; a running rebuild is aborted. Idempotent. */
    @Override
    public void close() {
        BloomFilter oldCurrent;
        Rebuild running;
        long stamp = lock.writeLock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            oldCurrent = current;
            running = rebuild;
            rebuild = null;
        } finally {
            lock.unlockWrite(stamp);
        }
        oldCurrent.close();
        if (running != null) {
            running.next.close();
        }
    }

    @Override
    public String toString() {
        long stamp = lock.readLock();
        try {
            return "RebuildingFilter{version="
                    + version
                    + (closed ? ", closed" : ", " + current)
                    + (rebuild != null ? ", rebuilding" : "")
                    + "}";
        } finally {
            lock.unlockRead(stamp);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("RebuildingFilter is closed");
        }
    }

    private void checkNoRebuild() {
        if (rebuild != null) {
            throw new IllegalStateException(
                    "a rebuild is already running (version " + version + ")");
        }
    }

    /**
     * A running rebuild: the scanner {@link #add}s the hash of every key of the store snapshot it
     * scans, then calls {@link #finish()}. One thread (the scanner) uses a handle.
     */
    public final class Rebuild implements AutoCloseable {

        private final BloomFilter next;
        private final long insertsAtBegin;
        private long keysScanned;

        private Rebuild(BloomFilter next, long insertsAtBegin) {
            this.next = next;
            this.insertsAtBegin = insertsAtBegin;
        }

        /** Adds the hash of one scanned key. */
        public void add(long hash) {
            long stamp = lock.readLock();
            try {
                checkActive();
                next.putConcurrent(hash);
                keysScanned++;
            } finally {
                lock.unlockRead(stamp);
            }
        }

        /** Adds {@code hashes[from, to)}, taking the lock once. */
        public void addAll(long[] hashes, int from, int to) {
            if (from < 0 || to > hashes.length || from > to) {
                throw new IndexOutOfBoundsException(
                        "[" + from + ", " + to + ") of " + hashes.length);
            }
            long stamp = lock.readLock();
            try {
                checkActive();
                for (int i = from; i < to; i++) {
                    next.putConcurrent(hashes[i]);
                }
                keysScanned += to - from;
            } finally {
                lock.unlockRead(stamp);
            }
        }

        /** Keys added by the scan so far. */
        public long keysScanned() {
            return keysScanned;
        }

        /** The new filter's geometry. */
        public FilterGeometry geometry() {
            return next.geometry();
        }

        /**
         * Makes the new filter current (atomically for every reader and the writer), frees the old
         * one, and returns the new version.
         *
         * @throws IllegalStateException if this rebuild was aborted or already finished, or the
         *     filter closed
         */
        public long finish() {
            BloomFilter old;
            long newVersion;
            long stamp = lock.writeLock();
            try {
                checkActive();
                old = current;
                current = next;
                rebuild = null;
                liveKeysAtBuild = keysScanned;
                keysAtBuild = next.estimatedKeys();
                insertsSinceBuild.addAndGet(-insertsAtBegin);
                rebuildThresholdBits = sizing.rebuildThresholdBits(next.geometry(), keysAtBuild);
                newVersion = version + 1;
                version = newVersion;
            } finally {
                lock.unlockWrite(stamp);
            }
            old.close();
            return newVersion;
        }

        /** Drops the new filter; the current one stays. Idempotent, and a no-op after finish. */
        public void abort() {
            long stamp = lock.writeLock();
            try {
                if (rebuild != this) {
                    return;
                }
                rebuild = null;
            } finally {
                lock.unlockWrite(stamp);
            }
            next.close();
        }

        /** {@link #abort()} unless finished: for try-with-resources around the scan. */
        @Override
        public void close() {
            abort();
        }

        private void checkActive() {
            checkOpen();
            if (rebuild != this) {
                throw new IllegalStateException("this rebuild was aborted or has finished");
            }
        }
    }

    /**
     * A point-in-time copy of a shard filter, owned by whoever took it: the filter, its version and
     * the counters the rebuild rule needs after a restore.
     */
    public static final class Snapshot implements AutoCloseable {

        private final BloomFilter filter;
        private final long version;
        private final long insertsSinceBuild;
        private final long liveKeysAtBuild;
        private final double keysAtBuild;

        private Snapshot(
                BloomFilter filter,
                long version,
                long insertsSinceBuild,
                long liveKeysAtBuild,
                double keysAtBuild) {
            this.filter = filter;
            this.version = version;
            this.insertsSinceBuild = insertsSinceBuild;
            this.liveKeysAtBuild = liveKeysAtBuild;
            this.keysAtBuild = keysAtBuild;
        }

        /** The copied filter; closed with this snapshot. For a client fetch, send its bytes. */
        public BloomFilter filter() {
            return filter;
        }

        public long version() {
            return version;
        }

        /**
         * The shard-filter form (header with version and counters, then the filter's own form) that
         * {@link RebuildingFilter#readFrom} loads: what a shard snapshot stores.
         */
        public void writeTo(OutputStream out) throws IOException {
            byte[] header = new byte[HEADER_BYTES];
            BloomFilter.putInt(header, 0, MAGIC);
            header[4] = (byte) (FORMAT_VERSION >>> 8);
            header[5] = (byte) FORMAT_VERSION;
            putLong(header, 8, version);
            putLong(header, 16, insertsSinceBuild);
            putLong(header, 24, liveKeysAtBuild);
            putLong(header, 32, Double.doubleToLongBits(keysAtBuild));
            CRC32C crc = new CRC32C();
            crc.update(header, 0, HEADER_BYTES - 4);
            BloomFilter.putInt(header, HEADER_BYTES - 4, (int) crc.getValue());
            out.write(header);
            filter.writeTo(out);
        }

        /** Bytes {@link #writeTo} writes. */
        public long serializedSizeBytes() {
            return HEADER_BYTES + filter.serializedSizeBytes();
        }

        @Override
        public void close() {
            filter.close();
        }
    }

    private static void putLong(byte[] b, int offset, long value) {
        BloomFilter.putInt(b, offset, (int) (value >>> 32));
        BloomFilter.putInt(b, offset + 4, (int) value);
    }

    private static long getLong(byte[] b, int offset) {
        return (long) BloomFilter.getInt(b, offset) << 32
                | (BloomFilter.getInt(b, offset + 4) & 0xffffffffL);
    }
}
