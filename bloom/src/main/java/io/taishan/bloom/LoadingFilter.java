package io.taishan.bloom;

import java.util.Arrays;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.StampedLock;

/**
 * The client's copy of one owned shard's filter: answers "maybe" until a copy fetched from the
 * server has been loaded, then "surely absent" for whatever the copy and the client's own writes
 * rule out.
 *
 * <p><b>Why a buffer.</b> The fetched copy contains the writes the server had applied when it
 * serialized it; a write the client made while the fetch was under way may still have been in
 * flight. So from the moment buffering starts every {@link #insert} is also remembered (as its
 * hash), and {@link PendingLoad#complete} merges those into the fetched copy before it answers.
 * Buffering starts at construction and, for a re-fetch, at {@link #beginLoad()}; it is bounded
 * ({@code maxBufferedHashes}): past the bound it gives up, the pending loads are rejected, and the
 * filter stays as it was (unloaded: "maybe" for everything; loaded: the old copy, which stays
 * correct) until the next {@code beginLoad}. Never wrong, at worst useless for a while.
 *
 * <p><b>Protocol</b> (the caller's part of "never a false negative"):
 *
 * <ol>
 *   <li>Create the filter when the shard is opened (restored), before any write to it.
 *   <li>{@code PendingLoad load = filter.beginLoad();} then send the fetch.
 *   <li>On the response: {@code load.complete(BloomFilter.readFrom(bytes), version)}; it returns
 *       false (and frees the fetched filter) if it is stale: another load completed since this one
 *       began, or the buffer overflowed in between.
 *   <li>When the server reports a new version, do 2 and 3 again; the old copy answers meanwhile.
 *       For a re-fetch, every write made before {@code beginLoad()} must be applied by the server
 *       before it serializes the copy: send the fetch after those writes are acknowledged, or on
 *       the same ordered stream as the writes. (For the first load this holds by rule 1: every
 *       write is buffered.)
 *   <li>When a read the filter answered "maybe" finds nothing on the server, {@link
 *       #reportFalsePositive()}.
 * </ol>
 *
 * <p><b>Concurrency.</b> {@link #insert} is called by one thread at a time (the writing task
 * thread; successive writers ordered by happens-before). {@link #mightContain}, the counters and
 * {@link PendingLoad#complete} may be called from any thread. Lookups and inserts share a {@link
 * StampedLock}'s read lock; a load's merge and swap, and {@link #close()}, hold its write lock, so
 * a lookup never reads a filter being freed and an insert can never slip between "buffer merged"
 * and "copy installed" (which would lose it).
 *
 * <p><b>Cost.</b> A lookup is the filter's lookup plus an uncontended read-lock acquire and release
 * (about 5 ns more in the harness), plus a counter increment when it answers "absent" or "not
 * loaded". A buffered insert costs 8 bytes of heap until the load; a load holds the write lock
 * while it merges the buffer (up to {@code maxBufferedHashes} puts, about 2 ms for 65,536).
 */
public final class LoadingFilter implements AutoCloseable {

    /** 65,536 hashes: 512 KiB per shard at most, and only while a fetch is under way. */
    public static final int DEFAULT_MAX_BUFFERED_HASHES = 1 << 16;

    /** {@link #version()} before the first load. */
    public static final long NO_VERSION = -1;

    private static final int INITIAL_BUFFER = 256;

    private final int maxBufferedHashes;
    private final StampedLock lock = new StampedLock();
    private final LongAdder absentAnswers = new LongAdder();
    private final LongAdder notLoadedAnswers = new LongAdder();
    private final LongAdder falsePositives = new LongAdder();

    // Guarded by lock. The inserter changes the buffer fields under the read lock (it is the only
    // one doing so while it holds it); everyone else changes them under the write lock.
    private BloomFilter filter;

    /**
     * Set while the filter is loaded empty and nothing was inserted yet: the geometry its bits get
     * at the first insert. An operator of 32,768 key groups opens that many empty shards, most of
     * which a short-lived or sparse job never writes: allocating each one's bits up front cost
     * about 4 µs and a direct allocation per shard.
     */
    private FilterGeometry emptyGeometry;

    /** Allocated at the first buffered hash: most shards are loaded before any write to them. */
    private long[] buffer;

    private int buffered;
    private boolean buffering = true;
    private long epoch;
    private boolean closed;
    private volatile long version = NO_VERSION;
    private volatile long overflows;

    /** An unloaded filter, buffering, with {@link #DEFAULT_MAX_BUFFERED_HASHES}. */
    public LoadingFilter() {
        this(DEFAULT_MAX_BUFFERED_HASHES);
    }

    public LoadingFilter(int maxBufferedHashes) {
        if (maxBufferedHashes < 0) {
            throw new IllegalArgumentException(
                    "maxBufferedHashes must be >= 0, got " + maxBufferedHashes);
        }
        this.maxBufferedHashes = maxBufferedHashes;
    }

    /**
     * A filter loaded at once with an empty copy of {@code geometry} at {@code version}: for a
     * shard known to start empty (every write to it then comes through {@link #insert}). Its bits
     * are allocated at the first insert; until then it answers "absent" for everything and holds no
     * off-heap memory.
     */
    public static LoadingFilter empty(FilterGeometry geometry, long version) {
        LoadingFilter filter = new LoadingFilter();
        filter.emptyGeometry = geometry;
        filter.buffering = false;
        filter.version = version;
        return filter;
    }

    /**
     * False only if the shard surely holds no key with this hash (no remote read needed); true when
     * it might, and always until a copy has been loaded.
     */
    public boolean mightContain(long hash) {
        long stamp = lock.readLock();
        try {
            checkOpen();
            BloomFilter f = filter;
            if (f == null) {
                if (emptyGeometry == null) {
                    notLoadedAnswers.increment();
                    return true;
                }
            } else if (f.mightContain(hash)) {
                return true;
            }
        } finally {
            lock.unlockRead(stamp);
        }
        absentAnswers.increment();
        return false;
    }

    /** Records a key this client writes to the shard. One thread at a time. */
    public void insert(long hash) {
        if (emptyGeometry != null) {
            allocateEmpty();
        }
        long stamp = lock.readLock();
        try {
            checkOpen();
            if (filter != null) {
                filter.put(hash);
            }
            if (buffering) {
                buffer(hash);
            }
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /**
     * Starts a load (step 2 of the protocol): buffering starts now if it is not already running.
     * Send the fetch after this returns.
     */
    public PendingLoad beginLoad() {
        long stamp = lock.writeLock();
        try {
            checkOpen();
            if (!buffering) {
                buffering = true;
                buffer = null;
                buffered = 0;
            }
            return new PendingLoad(epoch);
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Whether a fetched copy is loaded, so that lookups can answer "absent". */
    public boolean isLoaded() {
        long stamp = lock.readLock();
        try {
            return filter != null || emptyGeometry != null;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** The server version of the loaded copy, or {@link #NO_VERSION}. */
    public long version() {
        return version;
    }

    /**
     * The loaded copy's false-positive rate estimated from its fill (it grows with the client's own
     * inserts), or 1 while nothing is loaded: the caller's cue to fetch a fresher copy.
     */
    public double estimatedFpp() {
        long stamp = lock.readLock();
        try {
            return filter != null ? filter.estimatedFpp() : emptyGeometry != null ? 0.0 : 1.0;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Hashes buffered for the next load. */
    public int bufferedHashes() {
        long stamp = lock.readLock();
        try {
            return buffering ? buffered : 0;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Times the buffer overflowed and a load was given up. */
    public long bufferOverflows() {
        return overflows;
    }

    /** Lookups answered "absent": remote reads saved (or, if reported, false positives avoided). */
    public long absentAnswers() {
        return absentAnswers.sum();
    }

    /** Lookups answered "maybe" only because no copy was loaded yet. */
    public long notLoadedAnswers() {
        return notLoadedAnswers.sum();
    }

    /** False positives reported by the caller. */
    public long falsePositives() {
        return falsePositives.sum();
    }

    /**
     * Reports that a key this filter answered "maybe" for was absent on the server. A "maybe" given
     * while nothing was loaded is not the filter's false positive; report it only if {@link
     * #isLoaded()} was true at the lookup (a few miscounted around a load do not matter for a
     * metric).
     */
    public void reportFalsePositive() {
        falsePositives.increment();
    }

    /** Off-heap bytes of the loaded copy. */
    public long offHeapBytes() {
        long stamp = lock.readLock();
        try {
            return filter == null ? 0 : filter.sizeBytes();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Heap bytes of the buffer's array. */
    public long bufferBytes() {
        long stamp = lock.readLock();
        try {
            return buffer == null ? 0 : (long) buffer.length * Long.BYTES;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Frees the loaded copy and the buffer; afterwards every use throws. Idempotent. */
    @Override
    public void close() {
        BloomFilter loaded;
        long stamp = lock.writeLock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            loaded = filter;
            filter = null;
            emptyGeometry = null;
            buffer = null;
            buffering = false;
        } finally {
            lock.unlockWrite(stamp);
        }
        if (loaded != null) {
            loaded.close();
        }
    }

    @Override
    public String toString() {
        long stamp = lock.readLock();
        try {
            return "LoadingFilter{"
                    + (closed
                            ? "closed"
                            : filter == null && emptyGeometry == null
                                    ? "not loaded"
                                    : "version " + version)
                    + (buffering ? ", buffering " + buffered : "")
                    + "}";
        } finally {
            lock.unlockRead(stamp);
        }
    }

    private void buffer(long hash) {
        if (buffered >= maxBufferedHashes) {
            // Give up rather than grow without bound: this window's loads can no longer be made
            // complete, so the epoch change rejects them all.
            buffering = false;
            buffer = null;
            buffered = 0;
            epoch++;
            overflows = overflows + 1;
            return;
        }
        if (buffer == null) {
            buffer = newBuffer();
        } else if (buffered == buffer.length) {
            buffer = Arrays.copyOf(buffer, (int) Math.min(maxBufferedHashes, 2L * buffer.length));
        }
        buffer[buffered++] = hash;
    }

    /** The first insert into a filter loaded empty: its bits, allocated now. */
    private void allocateEmpty() {
        long stamp = lock.writeLock();
        try {
            if (emptyGeometry != null && !closed) {
                filter = BloomFilter.create(emptyGeometry);
                emptyGeometry = null;
            }
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    private long[] newBuffer() {
        return new long[Math.min(INITIAL_BUFFER, Math.max(1, maxBufferedHashes))];
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("LoadingFilter is closed");
        }
    }

    /** One fetch's load, from {@link #beginLoad()} to {@link #complete}. */
    public final class PendingLoad {

        private final long loadEpoch;

        private PendingLoad(long loadEpoch) {
            this.loadEpoch = loadEpoch;
        }

        /**
         * Merges the buffered hashes into {@code fetched} and makes it the loaded copy, freeing the
         * previous one. Takes ownership of {@code fetched} either way.
         *
         * @return false, having freed {@code fetched}, if this load is stale (another load
         *     completed, or the buffer overflowed, since it began) or the filter is closed
         */
        public boolean complete(BloomFilter fetched, long fetchedVersion) {
            if (fetched.isClosed()) {
                throw new IllegalArgumentException("the fetched filter is already closed");
            }
            BloomFilter previous;
            long stamp = lock.writeLock();
            try {
                if (closed || loadEpoch != epoch) {
                    previous = fetched;
                } else {
                    for (int i = 0; i < buffered; i++) {
                        fetched.put(buffer[i]);
                    }
                    previous = filter;
                    filter = fetched;
                    emptyGeometry = null;
                    version = fetchedVersion;
                    buffering = false;
                    buffer = null;
                    buffered = 0;
                    epoch++;
                }
            } finally {
                lock.unlockWrite(stamp);
            }
            if (previous != null) {
                previous.close();
            }
            return previous != fetched;
        }
    }
}
