package io.taishan.cache;

import io.taishan.bloom.BloomFilter;
import io.taishan.bloom.KeyHash;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.h2.mvstore.Cursor;
import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;
import org.h2.mvstore.type.ByteArrayDataType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cache tier on the TaskManager's local disk, behind the in-memory cache ({@link
 * TieredStateCache}): the same {@code (space, key)} entries, with their expiry and the known-absent
 * mark, for state far larger than memory.
 *
 * <p><b>Never the truth.</b> Unflushed writes live in the backend's write queue, never only here;
 * the directory is private to one process (a subdirectory with a lock held while it lives), wiped
 * when the tier closes, and a directory left by a process that died is removed by the next tier
 * that starts in the same place. Losing the disk loses nothing but speed.
 *
 * <p><b>Design.</b> Writes go to a <em>memtable</em> (a hash map on the heap, at most {@link
 * #memtableBytes} of entries). A full memtable is frozen and a background thread writes it, in key
 * order, into a new <em>segment</em>: an H2 {@link MVStore} file (a pure-Java B-tree store: no
 * native library to clash with Flink's frocksdbjni or the kv-server's rocksdbjni, a 0.4 MB jar
 * without dependencies) that is never written again, with a Bloom filter of its keys in memory
 * (module {@code bloom}: one hash per get for all segments, one cache line per probe). Once the
 * segments take more than {@code maxBytes}, the oldest is closed and its file deleted, with every
 * entry in it. A get looks in the memtable, the frozen memtables, then the segments from the newest
 * to the oldest, and stops at the first entry for the key, so the newest write wins; an entry found
 * in a segment is written again into the memtable, so entries in use keep moving forward and what a
 * dropped segment takes with it is what nobody read for the longest time: eviction by recency at
 * the granularity of a segment, with no per-entry bookkeeping. An invalidation writes a tombstone
 * (one small write, not a delete in every segment).
 *
 * <p>Why not write each entry into the B-tree as it comes: MVStore is copy-on-write, and random
 * keys dirty a different leaf page each, so every commit rewrote most leaves: measured on this
 * machine, 15 µs a put and a file 9 times the data for 300,000 random 124-byte entries, against 1.9
 * µs an entry and 1.03 times the data when the same entries are written in key order.
 *
 * <p><b>Cost model.</b> A put is a hash-map insert on the caller's thread; sorting and writing the
 * segment costs the flush thread about 2 µs an entry. A get that misses the memtables costs one
 * Bloom probe per segment and a B-tree lookup in those that may hold the key (about 5 µs measured
 * for a random key of a 128 MB segment: a page read from the file, usually from the OS page cache,
 * when it is not in the segment's {@value #PAGE_CACHE_MB_PER_SEGMENT} MiB page cache; measured with
 * a 4 MiB one). A memtable is 1/{@value #MEMTABLE_SHARE} of the tier, at most 32 MiB, so a tier of
 * up to 2 GiB has at most about {@value #MEMTABLE_SHARE} segments. A larger one would have
 * proportionally more (3,200 for 100 GiB, each with its page cache on the heap and its Bloom filter
 * probed by every miss), so once there are more than {@value #MEMTABLE_SHARE}, a thread of its own
 * merges {@value #MERGE_WIDTH} adjacent segments under 1/{@value #MEMTABLE_SHARE} of the tier into
 * one, the run with the fewest bytes first (size-tiered: each entry is rewritten about
 * log<sub>{@value #MERGE_WIDTH}</sub>(tier / 64 / memtable) times, 2 for 100 GiB), keeping the
 * newest entry of each key, tombstones included (an older segment outside the run may hold the
 * key). A get keeps using the old segments until the merged one replaces them; the merge is given
 * up if one of them was evicted meanwhile. If the flush thread falls {@value #MAX_FROZEN} memtables
 * behind, writers wait for it: the heap holds at most {@code 1 + MAX_FROZEN} memtables (96 MiB for
 * the largest).
 *
 * <p><b>Consistency.</b> Writes of one key must be ordered (one thread at a time, or ordered by the
 * caller), as for every {@link StateCache}. A frozen memtable stays readable until its segment is
 * published, so an entry is always in exactly the places a get looks; a get racing the drop of a
 * segment sees a miss.
 */
public final class LocalDiskCache implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LocalDiskCache.class);

    /** The smallest tier: a memtable and a few segments. */
    static final long MIN_BYTES = 4L << 20;

    /** The memtable takes this share of the tier's size, up to {@link #MAX_MEMTABLE_BYTES}. */
    static final int MEMTABLE_SHARE = 64;

    static final long MAX_MEMTABLE_BYTES = 32L << 20;

    /** Frozen memtables waiting for the flush thread before writers wait. */
    static final int MAX_FROZEN = 2;

    /** Adjacent segments merged into one. */
    static final int MERGE_WIDTH = 8;

    /**
     * MVStore's cache of deserialized pages, per segment: enough for the inner nodes of a full
     * segment's B-tree and some leaves; 64 MiB of heap for the 64 segments of a 2 GiB tier.
     */
    static final int PAGE_CACHE_MB_PER_SEGMENT = 1;

    /** Larger values are not kept (the in-memory cache keeps none either). */
    static final int MAX_VALUE_BYTES = 1 << 20;

    /**
     * What a memtable entry costs beyond its key and value: map node, key holder, array headers.
     */
    static final int ENTRY_OVERHEAD_BYTES = 96;

    private static final double BLOOM_FPP = 0.01;

    private static final String DIRECTORY_PREFIX = "taishan-cache-";
    private static final String LOCK_FILE = "lock";

    private static final byte VALUE = 0;
    private static final byte ABSENT = 1;
    private static final byte TOMBSTONE = 2;
    private static final int HEADER_BYTES = 1 + Long.BYTES;

    private static final VarHandle LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    /**
     * Where the tier lives and how large it may grow.
     *
     * @param directory a local directory; the tier works in a subdirectory of its own
     * @param maxBytes the disk the tier may use
     */
    public record Spec(String directory, long maxBytes) implements Serializable {
        public Spec {
            Objects.requireNonNull(directory, "directory");
            if (directory.isBlank()) {
                throw new IllegalArgumentException("the local cache directory is empty");
            }
            if (maxBytes < MIN_BYTES) {
                throw new IllegalArgumentException(
                        "the local cache needs at least "
                                + (MIN_BYTES >> 20)
                                + " MiB, got "
                                + maxBytes
                                + " bytes");
            }
        }
    }

    /** A value found in the tier, with the expiry it was put with. */
    record Hit(byte[] value, long expireAtMillis) {}

    private final Spec spec;
    private final Path directory;
    private final FileChannel lockChannel;
    private final FileLock lock;
    private final long memtableBytes;
    private final InstantSource clock;
    private final ExecutorService flusher;

    /** Merges small segments, off the flush thread so that writers never wait for a merge. */
    private final ExecutorService merger;

    /** A segment smaller than this may be merged. */
    private final long mergeBelowBytes;

    /** Under {@link #layoutLock}: a merge is queued or running. */
    private boolean merging;

    private final AtomicLong merges = new AtomicLong();

    private final Object layoutLock = new Object();

    /** Replaced whole under {@link #layoutLock}, read without a lock. */
    private volatile Layout layout = new Layout(new Memtable(), List.of(), List.of());

    private final AtomicLong nextSegment = new AtomicLong();
    private boolean closed;

    private final LongAdder hits = new LongAdder();
    private final LongAdder absentHits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder puts = new LongAdder();
    private final LongAdder expirations = new LongAdder();
    private final AtomicLong evictions = new AtomicLong();
    private final AtomicLong flushFailures = new AtomicLong();

    /** Where a get looks, newest first: each list is replaced, never changed. */
    private record Layout(Memtable memtable, List<Memtable> frozen, List<Segment> segments) {}

    /**
     * Opens a tier in a fresh subdirectory of {@code spec.directory()}, first removing the
     * subdirectories of tiers whose process is gone.
     *
     * @throws UncheckedIOException if the directory cannot be made or locked
     */
    LocalDiskCache(Spec spec, InstantSource clock) {
        this(spec, clock, Math.min(MAX_MEMTABLE_BYTES, spec.maxBytes() / MEMTABLE_SHARE));
    }

    /** With memtables of {@code memtableBytes}: a test makes many segments of a small tier so. */
    LocalDiskCache(Spec spec, InstantSource clock, long memtableBytes) {
        this.spec = spec;
        this.clock = clock;
        this.memtableBytes = memtableBytes;
        this.mergeBelowBytes = spec.maxBytes() / MEMTABLE_SHARE;
        Path base = Path.of(spec.directory()).toAbsolutePath();
        try {
            Files.createDirectories(base);
            removeAbandoned(base);
            directory = Files.createDirectory(base.resolve(DIRECTORY_PREFIX + UUID.randomUUID()));
            lockChannel =
                    FileChannel.open(
                            directory.resolve(LOCK_FILE),
                            StandardOpenOption.CREATE,
                            StandardOpenOption.WRITE);
            lock = lockChannel.lock();
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "Could not open the local state cache under "
                            + base
                            + " (taishan.cache.local-dir): "
                            + e.getMessage(),
                    e);
        }
        flusher = Executors.newSingleThreadExecutor(r -> tierThread(r, "flush"));
        merger = Executors.newSingleThreadExecutor(r -> tierThread(r, "merge"));
        LOG.info(
                "Local state cache in {}, up to {} MiB, memtables of {} KiB",
                directory,
                spec.maxBytes() >> 20,
                memtableBytes >> 10);
    }

    private static Thread tierThread(Runnable r, String job) {
        Thread t = new Thread(r, "taishan-local-cache-" + job);
        t.setDaemon(true);
        // Not the context loader of the job whose subtask opened the tier: the tier outlives it.
        t.setContextClassLoader(LocalDiskCache.class.getClassLoader());
        return t;
    }

    /** This tier's own directory. */
    Path directory() {
        return directory;
    }

    /** The entry of the key, with {@link StateCache#ABSENT} for known absent, or null. */
    @Nullable
    Hit get(long space, byte[] key) {
        StoreKey sk = new StoreKey(storeKey(space, key));
        Layout l = layout;
        byte[] stored = l.memtable().map.get(sk);
        for (int i = 0; stored == null && i < l.frozen().size(); i++) {
            stored = l.frozen().get(i).map.get(sk);
        }
        boolean inSegment = false;
        try {
            for (int i = 0; stored == null && i < l.segments().size(); i++) {
                stored = l.segments().get(i).get(sk);
                inSegment = stored != null;
            }
        } catch (RuntimeException e) {
            // Dropped while this get ran, or unreadable: an older segment could hold an older
            // value, so this is a miss.
            stored = null;
        }
        if (stored == null || stored[0] == TOMBSTONE) {
            misses.increment();
            return null;
        }
        long expireAt = longAt(stored, 1);
        if (expireAt <= clock.millis()) {
            // Any older entry of the key is an older value: none is the answer.
            expirations.increment();
            misses.increment();
            return null;
        }
        if (inSegment) {
            write(sk, stored);
        }
        if (stored[0] == ABSENT) {
            absentHits.increment();
            return new Hit(StateCache.ABSENT, expireAt);
        }
        hits.increment();
        return new Hit(Arrays.copyOfRange(stored, HEADER_BYTES, stored.length), expireAt);
    }

    /** Keeps the value ({@link StateCache#ABSENT} by identity: known absent) until the expiry. */
    void put(long space, byte[] key, byte[] value, long expireAtMillis) {
        puts.increment();
        if (value.length > MAX_VALUE_BYTES || expireAtMillis <= clock.millis()) {
            invalidate(space, key);
            return;
        }
        boolean absent = value == StateCache.ABSENT;
        byte[] stored = new byte[HEADER_BYTES + (absent ? 0 : value.length)];
        stored[0] = absent ? ABSENT : VALUE;
        putLong(stored, 1, expireAtMillis);
        System.arraycopy(value, 0, stored, HEADER_BYTES, stored.length - HEADER_BYTES);
        write(new StoreKey(storeKey(space, key)), stored);
    }

    void invalidate(long space, byte[] key) {
        write(new StoreKey(storeKey(space, key)), new byte[] {TOMBSTONE});
    }

    private void write(StoreKey k, byte[] stored) {
        while (true) {
            Memtable m = layout.memtable();
            m.writers.incrementAndGet();
            try {
                // Frozen after this writer read the layout: the flush may be reading it already.
                if (m.frozen) {
                    continue;
                }
                byte[] old = m.map.put(k, stored);
                long delta = entryBytes(k, stored) - (old == null ? 0 : entryBytes(k, old));
                if (m.bytes.addAndGet(delta) < memtableBytes) {
                    return;
                }
            } finally {
                m.writers.decrementAndGet();
            }
            freeze(m);
            return;
        }
    }

    private static long entryBytes(StoreKey k, byte[] stored) {
        return k.bytes.length + stored.length + ENTRY_OVERHEAD_BYTES;
    }

    /** Hands a full memtable to the flush thread, waiting while it is far behind. */
    private void freeze(Memtable full) {
        synchronized (layoutLock) {
            while (!closed && layout.memtable() == full && layout.frozen().size() >= MAX_FROZEN) {
                try {
                    layoutLock.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            Layout l = layout;
            if (closed || l.memtable() != full) {
                return;
            }
            full.frozen = true;
            layout = new Layout(new Memtable(), prepend(full, l.frozen()), l.segments());
            flusher.execute(() -> flush(full));
        }
    }

    /** On the flush thread: the frozen memtable becomes the newest segment. */
    private void flush(Memtable frozen) {
        while (frozen.writers.get() > 0) {
            Thread.onSpinWait();
        }
        Segment segment = null;
        try {
            segment =
                    Segment.write(
                            directory.resolve("segment-" + nextSegment.getAndIncrement() + ".mv"),
                            frozen);
        } catch (RuntimeException e) {
            if (isClosed()) {
                return;
            }
            flushFailures.incrementAndGet();
            LOG.warn(
                    "Could not write a segment of the local state cache in {}: the tier starts"
                            + " empty",
                    directory,
                    e);
        }
        List<Segment> dropped = new ArrayList<>();
        synchronized (layoutLock) {
            Layout l = layout;
            List<Memtable> frozenLeft = new ArrayList<>(l.frozen());
            frozenLeft.remove(frozen);
            List<Segment> segments = new ArrayList<>();
            if (segment != null && !closed) {
                segments.add(segment);
                segments.addAll(l.segments());
                long bytes = 0;
                for (int i = 0; i < segments.size(); i++) {
                    bytes += segments.get(i).fileBytes;
                    if (i > 0 && bytes > spec.maxBytes()) {
                        dropped.addAll(segments.subList(i, segments.size()));
                        segments = new ArrayList<>(segments.subList(0, i));
                        break;
                    }
                }
            } else {
                // Older segments may hold older values of keys the lost memtable had.
                dropped.addAll(l.segments());
                if (segment != null) {
                    dropped.add(segment);
                }
            }
            layout = new Layout(l.memtable(), List.copyOf(frozenLeft), List.copyOf(segments));
            layoutLock.notifyAll();
            scheduleMergeIfDue();
        }
        for (Segment d : dropped) {
            evictions.addAndGet(d.entries);
            d.delete();
        }
    }

    @GuardedBy("layoutLock")
    private void scheduleMergeIfDue() {
        if (!merging && !closed && mergeRun(layout.segments()) >= 0) {
            merging = true;
            merger.execute(this::mergeOnce);
        }
    }

    /**
     * Where the run to merge starts in {@code segments} (newest first), or -1 if none is due: with
     * more than {@value #MEMTABLE_SHARE} segments, the {@value #MERGE_WIDTH} adjacent ones, each
     * under {@link #mergeBelowBytes}, with the fewest bytes together.
     */
    private int mergeRun(List<Segment> segments) {
        if (segments.size() <= MEMTABLE_SHARE) {
            return -1;
        }
        int best = -1;
        long bestBytes = Long.MAX_VALUE;
        long runBytes = 0;
        int runLength = 0;
        for (int i = 0; i < segments.size(); i++) {
            Segment s = segments.get(i);
            if (s.fileBytes >= mergeBelowBytes) {
                runBytes = 0;
                runLength = 0;
                continue;
            }
            runBytes += s.fileBytes;
            runLength++;
            if (runLength > MERGE_WIDTH) {
                runBytes -= segments.get(i - MERGE_WIDTH).fileBytes;
                runLength = MERGE_WIDTH;
            }
            if (runLength == MERGE_WIDTH && runBytes < bestBytes) {
                best = i - MERGE_WIDTH + 1;
                bestBytes = runBytes;
            }
        }
        return best;
    }

    /** On the merge thread: one due run becomes one segment; the next is scheduled, if any. */
    private void mergeOnce() {
        List<Segment> run;
        synchronized (layoutLock) {
            int from = closed ? -1 : mergeRun(layout.segments());
            if (from < 0) {
                merging = false;
                layoutLock.notifyAll();
                return;
            }
            run = List.copyOf(layout.segments().subList(from, from + MERGE_WIDTH));
        }
        Segment merged = null;
        try {
            merged =
                    Segment.merge(
                            directory.resolve("segment-" + nextSegment.getAndIncrement() + ".mv"),
                            run);
        } catch (RuntimeException e) {
            // A segment of the run evicted (closed) meanwhile, or the disk failed: the run stays.
            if (!isClosed() && stillIn(run)) {
                LOG.warn("Could not merge segments of the local state cache in {}", directory, e);
            }
        }
        int at;
        synchronized (layoutLock) {
            List<Segment> segments = layout.segments();
            at = merged == null || closed ? -1 : indexOfRun(segments, run);
            if (at >= 0) {
                List<Segment> replaced = new ArrayList<>(segments.subList(0, at));
                replaced.add(merged);
                replaced.addAll(segments.subList(at + run.size(), segments.size()));
                layout = new Layout(layout.memtable(), layout.frozen(), List.copyOf(replaced));
                merges.incrementAndGet();
            }
            merging = false;
            scheduleMergeIfDue();
            layoutLock.notifyAll();
        }
        if (at < 0) {
            if (merged != null) {
                merged.delete();
            }
            return;
        }
        for (Segment s : run) {
            s.delete();
        }
    }

    private boolean stillIn(List<Segment> run) {
        synchronized (layoutLock) {
            return indexOfRun(layout.segments(), run) >= 0;
        }
    }

    /** Where {@code run} stands, whole and in order, in {@code segments}; -1 if it does not. */
    private static int indexOfRun(List<Segment> segments, List<Segment> run) {
        int at = segments.indexOf(run.get(0));
        if (at < 0 || at + run.size() > segments.size()) {
            return -1;
        }
        for (int i = 1; i < run.size(); i++) {
            if (segments.get(at + i) != run.get(i)) {
                return -1;
            }
        }
        return at;
    }

    private boolean isClosed() {
        synchronized (layoutLock) {
            return closed;
        }
    }

    private static <T> List<T> prepend(T first, List<T> rest) {
        List<T> all = new ArrayList<>(rest.size() + 1);
        all.add(first);
        all.addAll(rest);
        return List.copyOf(all);
    }

    /** Waits until every frozen memtable is a segment. For tests. */
    void awaitFlushes() throws InterruptedException {
        synchronized (layoutLock) {
            while (!closed && !layout.frozen().isEmpty()) {
                layoutLock.wait();
            }
        }
    }

    /** Waits until every frozen memtable is a segment and no merge is due. For tests. */
    void awaitFlushesAndMerges() throws InterruptedException {
        synchronized (layoutLock) {
            while (!closed && (!layout.frozen().isEmpty() || merging)) {
                layoutLock.wait();
            }
        }
    }

    /** The segments now. For tests. */
    int segmentCount() {
        return layout.segments().size();
    }

    /** Merges made so far. For tests. */
    long merges() {
        return merges.get();
    }

    /**
     * Counters since the tier opened, and its size: {@code bytesUsed} the segments' files, {@code
     * entries} those in segments and memtables, {@code capacity} the disk budget.
     */
    CacheStats stats() {
        Layout l = layout;
        long bytes = 0;
        long entries = l.memtable().map.size();
        for (Memtable m : l.frozen()) {
            entries += m.map.size();
        }
        for (Segment s : l.segments()) {
            bytes += s.fileBytes;
            entries += s.entries;
        }
        return new CacheStats(
                hits.sum(),
                absentHits.sum(),
                misses.sum(),
                puts.sum(),
                evictions.get(),
                expirations.sum(),
                bytes,
                spec.maxBytes(),
                entries);
    }

    /**
     * Segments that could not be written (disk full, I/O errors), each of which emptied the tier.
     */
    long flushFailures() {
        return flushFailures.get();
    }

    /** Stops the flush thread, closes every segment and deletes the tier's directory. */
    @Override
    public void close() {
        List<Segment> segments;
        synchronized (layoutLock) {
            if (closed) {
                return;
            }
            closed = true;
            segments = layout.segments();
            layout = new Layout(new Memtable(), List.of(), List.of());
            layoutLock.notifyAll();
        }
        for (ExecutorService thread : List.of(flusher, merger)) {
            thread.shutdownNow();
            try {
                if (!thread.awaitTermination(10, TimeUnit.SECONDS)) {
                    LOG.warn("A thread of the local state cache did not stop within 10 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        for (Segment s : segments) {
            s.delete();
        }
        try {
            lock.release();
            lockChannel.close();
        } catch (IOException e) {
            LOG.warn("Could not release the lock of the local state cache {}", directory, e);
        }
        deleteRecursively(directory);
    }

    /** Removes the directories of tiers whose process no longer holds their lock. */
    private static void removeAbandoned(Path base) throws IOException {
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(base, DIRECTORY_PREFIX + "*")) {
            for (Path dir : dirs) {
                if (Files.isDirectory(dir) && !locked(dir.resolve(LOCK_FILE))) {
                    LOG.info("Removing the local state cache {} of a process that is gone", dir);
                    deleteRecursively(dir);
                }
            }
        }
    }

    private static boolean locked(Path lockFile) {
        try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.WRITE)) {
            FileLock probe = channel.tryLock();
            if (probe == null) {
                return true;
            }
            probe.release();
            return false;
        } catch (OverlappingFileLockException e) {
            // Held by this JVM: a tier of another class loader.
            return true;
        } catch (NoSuchFileException e) {
            // Its process died before it took the lock, or it is being made right now; a
            // directory made right now has its lock within milliseconds, so leave young ones.
            return isYoung(lockFile.getParent());
        } catch (IOException e) {
            return true;
        }
    }

    private static boolean isYoung(Path dir) {
        try {
            return Files.getLastModifiedTime(dir).toMillis() > System.currentTimeMillis() - 60_000;
        } catch (IOException e) {
            return true;
        }
    }

    private static void deleteRecursively(Path dir) {
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder())
                    .forEach(
                            p -> {
                                try {
                                    Files.deleteIfExists(p);
                                } catch (IOException e) {
                                    LOG.warn("Could not delete {}", p, e);
                                }
                            });
        } catch (NoSuchFileException e) {
            // Gone already.
        } catch (IOException | UncheckedIOException e) {
            LOG.warn("Could not delete the local state cache {}", dir, e);
        }
    }

    /** {@code [space, 8 bytes][key]}: the space first, so a space's keys sit together. */
    private static byte[] storeKey(long space, byte[] key) {
        byte[] k = new byte[Long.BYTES + key.length];
        putLong(k, 0, space);
        System.arraycopy(key, 0, k, Long.BYTES, key.length);
        return k;
    }

    private static void putLong(byte[] b, int at, long v) {
        LONG.set(b, at, v);
    }

    private static long longAt(byte[] b, int at) {
        return (long) LONG.get(b, at);
    }

    /**
     * The entries a put wrote since the last freeze, on the heap, in a hash map: a lookup is a hash
     * probe (a skip list's was the largest single cost of a get, measured); the flush sorts.
     */
    private static final class Memtable {
        final ConcurrentHashMap<StoreKey, byte[]> map = new ConcurrentHashMap<>();
        final AtomicLong bytes = new AtomicLong();

        /** Puts under way: the flush reads the map once none is left after {@link #frozen}. */
        final AtomicInteger writers = new AtomicInteger();

        volatile boolean frozen;

        /** The keys in the store's order (unsigned bytes). Frozen memtables only. */
        StoreKey[] sortedKeys() {
            StoreKey[] keys = map.keySet().toArray(new StoreKey[0]);
            Arrays.sort(keys, (a, b) -> Arrays.compareUnsigned(a.bytes, b.bytes));
            return keys;
        }
    }

    /**
     * A store key with its 64-bit hash, computed once: the memtables' hash maps and the segments'
     * Bloom filters both use it.
     */
    private static final class StoreKey {
        final byte[] bytes;
        final long hash;

        StoreKey(byte[] bytes) {
            this.bytes = bytes;
            this.hash = KeyHash.hash(bytes);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(hash);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof StoreKey other && Arrays.equals(bytes, other.bytes);
        }
    }

    /** One MVStore file, written once in key order, with a Bloom filter of its keys. */
    private static final class Segment {
        final Path file;
        final MVStore store;
        final MVMap<byte[], byte[]> map;

        /** Not closed when the segment is dropped: a get may still probe it; GC frees it. */
        final BloomFilter keys;

        final long entries;
        final long fileBytes;

        private Segment(Path file, MVStore store, MVMap<byte[], byte[]> map, BloomFilter keys) {
            this.file = file;
            this.store = store;
            this.map = map;
            this.keys = keys;
            this.entries = map.sizeAsLong();
            this.fileBytes = store.getFileStore().size();
        }

        static Segment write(Path file, Memtable memtable) {
            StoreKey[] sorted = memtable.sortedKeys();
            return write(
                    file,
                    sorted.length,
                    (map, keys) -> {
                        for (StoreKey k : sorted) {
                            map.put(k.bytes, memtable.map.get(k));
                            keys.put(k.hash);
                        }
                    });
        }

        /**
         * The entries of {@code run} (newest first) in one segment, the newest of each key: a merge
         * of their key-ordered cursors.
         */
        static Segment merge(Path file, List<Segment> run) {
            long entries = 0;
            for (Segment s : run) {
                entries += s.entries;
            }
            return write(
                    file,
                    entries,
                    (map, keys) -> {
                        List<Cursor<byte[], byte[]>> cursors = new ArrayList<>(run.size());
                        for (Segment s : run) {
                            Cursor<byte[], byte[]> c = s.map.cursor(null);
                            if (c.hasNext()) {
                                c.next();
                                cursors.add(c);
                            } else {
                                cursors.add(null);
                            }
                        }
                        while (true) {
                            // The smallest key; of equal keys the newest segment's (lowest index).
                            int newest = -1;
                            for (int i = 0; i < cursors.size(); i++) {
                                Cursor<byte[], byte[]> c = cursors.get(i);
                                if (c != null
                                        && (newest < 0
                                                || Arrays.compareUnsigned(
                                                                c.getKey(),
                                                                cursors.get(newest).getKey())
                                                        < 0)) {
                                    newest = i;
                                }
                            }
                            if (newest < 0) {
                                return;
                            }
                            byte[] key = cursors.get(newest).getKey();
                            map.put(key, cursors.get(newest).getValue());
                            keys.put(KeyHash.hash(key));
                            for (int i = 0; i < cursors.size(); i++) {
                                Cursor<byte[], byte[]> c = cursors.get(i);
                                if (c != null && Arrays.equals(c.getKey(), key)) {
                                    if (c.hasNext()) {
                                        c.next();
                                    } else {
                                        cursors.set(i, null);
                                    }
                                }
                            }
                        }
                    });
        }

        private interface Filler {
            void fill(MVMap<byte[], byte[]> map, BloomFilter keys);
        }

        private static Segment write(Path file, long expectedEntries, Filler filler) {
            MVStore store =
                    new MVStore.Builder()
                            .fileName(file.toString())
                            .cacheSize(PAGE_CACHE_MB_PER_SEGMENT)
                            // Written once, then dropped whole: nothing to compact.
                            .autoCompactFillRate(0)
                            .open();
            try {
                store.setRetentionTime(0);
                MVMap<byte[], byte[]> map =
                        store.openMap(
                                "entries",
                                new MVMap.Builder<byte[], byte[]>()
                                        .keyType(ByteArrayDataType.INSTANCE)
                                        .valueType(ByteArrayDataType.INSTANCE));
                BloomFilter keys = BloomFilter.create(Math.max(1, expectedEntries), BLOOM_FPP);
                filler.fill(map, keys);
                store.commit();
                return new Segment(file, store, map, keys);
            } catch (RuntimeException e) {
                store.closeImmediately();
                deleteQuietly(file);
                throw e;
            }
        }

        /** Set before the store closes: a get that raced it must not take its "no" for one. */
        private volatile boolean deleted;

        /**
         * The key's entry, or null; throws if the segment was deleted meanwhile, since a closed
         * store may answer null for a key it holds, and an older segment could then answer with an
         * older entry (a merged run is deleted with older segments behind it).
         */
        @Nullable
        byte[] get(StoreKey k) {
            byte[] stored = keys.mightContain(k.hash) ? map.get(k.bytes) : null;
            if (deleted) {
                throw new IllegalStateException("segment " + file + " deleted during a get");
            }
            return stored;
        }

        void delete() {
            deleted = true;
            store.closeImmediately();
            deleteQuietly(file);
        }

        private static void deleteQuietly(Path file) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                LOG.warn("Could not delete the local state cache segment {}", file, e);
            }
        }
    }
}
