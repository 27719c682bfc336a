package io.taishan.kv.server.storage;

import io.taishan.bloom.KeyHash;
import io.taishan.kv.protocol.ScanRange;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import javax.annotation.Nullable;
import org.rocksdb.Checkpoint;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.Range;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.SizeApproximationFlag;
import org.rocksdb.Slice;
import org.rocksdb.Snapshot;
import org.rocksdb.WriteBatch;

/**
 * One open RocksDB instance of a {@link RangeStore}: the key ranges of several shards of one table.
 * Every stored key is {@code [shard, 2 bytes big-endian][the client's key]}, so a shard is one
 * contiguous range, in the order of its keys, as Flink's RocksDB backend puts the key group first.
 * This class adds and strips that prefix; callers speak in (shard, key). Not concerned with
 * locking.
 */
final class RangeDb implements AutoCloseable {
    /** Bytes of the shard prefix of every stored key; shards are at most 32,768. */
    static final int PREFIX_BYTES = 2;

    private static final byte[] EMPTY = new byte[0];

    /**
     * What a bounded read answers, by identity, for a value larger than it may return inline: the
     * value is there, and must be read whole with {@link #get} under the large-value budget.
     */
    static final byte[] CHUNKED = new byte[0];

    /**
     * Bounded reads copy the value into this first: RocksDB's Java API reads a value only whole,
     * but into a caller's array it copies just what fits and tells the full size, so a large value
     * is never allocated on the heap by a read that may not hold it. Values up to this size (nearly
     * all) are copied out of it once; larger ones that may still go inline are read again.
     */
    private static final int PROBE_BYTES = 16 << 10;

    private static final ThreadLocal<byte[]> PROBE =
            ThreadLocal.withInitial(() -> new byte[PROBE_BYTES]);

    private final RocksResources resources;
    private final Options options;
    private final RocksDB db;

    private RangeDb(RocksResources resources, Options options, RocksDB db) {
        this.resources = resources;
        this.options = options;
        this.db = db;
    }

    static RangeDb open(RocksResources resources, Path dir) throws RocksDBException {
        Options options = resources.newStoreOptions();
        try {
            return new RangeDb(resources, options, RocksDB.open(options, dir.toString()));
        } catch (RocksDBException | RuntimeException e) {
            options.close();
            throw e;
        }
    }

    // ---- keys

    static byte[] key(int shard, byte[] key) {
        byte[] stored = new byte[PREFIX_BYTES + key.length];
        stored[0] = (byte) (shard >>> 8);
        stored[1] = (byte) shard;
        System.arraycopy(key, 0, stored, PREFIX_BYTES, key.length);
        return stored;
    }

    /** The first stored key of {@code shard}'s range. */
    static byte[] rangeStart(int shard) {
        return new byte[] {(byte) (shard >>> 8), (byte) shard};
    }

    /** The first stored key after {@code shard}'s range (shard + 1's start; 32,768 fits too). */
    static byte[] rangeEnd(int shard) {
        return rangeStart(shard + 1);
    }

    private static byte[] strip(byte[] stored) {
        return Arrays.copyOfRange(stored, PREFIX_BYTES, stored.length);
    }

    // ---- reads

    @Nullable
    byte[] get(int shard, byte[] key) throws RocksDBException {
        return db.get(key(shard, key));
    }

    List<byte[]> multiGet(int shard, List<byte[]> keys) throws RocksDBException {
        List<byte[]> stored = new ArrayList<>(keys.size());
        for (byte[] k : keys) {
            stored.add(key(shard, k));
        }
        return db.multiGetAsList(stored);
    }

    /**
     * The value, null if absent, or {@link #CHUNKED} if it is larger than {@code maxInline}; never
     * allocates more than {@code maxInline} bytes.
     */
    @Nullable
    byte[] getInline(int shard, byte[] key, int maxInline) throws RocksDBException {
        return getStoredInline(key(shard, key), maxInline);
    }

    @Nullable
    private byte[] getStoredInline(byte[] stored, int maxInline) throws RocksDBException {
        byte[] probe = PROBE.get();
        int size = db.get(stored, probe);
        if (size == RocksDB.NOT_FOUND) {
            return null;
        }
        if (size <= probe.length) {
            return size <= maxInline ? Arrays.copyOf(probe, size) : CHUNKED;
        }
        if (size > maxInline) {
            return CHUNKED;
        }
        // Between the two reads the value may have changed.
        byte[] value = db.get(stored);
        return value == null || value.length <= maxInline ? value : CHUNKED;
    }

    /** The value's size, or -1 if absent; allocates nothing of the value's size on the heap. */
    long valueSize(int shard, byte[] key) throws RocksDBException {
        int size = db.get(key(shard, key), PROBE.get());
        return size == RocksDB.NOT_FOUND ? -1 : size;
    }

    /** The first {@code n} bytes of the value (fewer if it is shorter), or null if absent. */
    @Nullable
    byte[] getPrefix(int shard, byte[] key, int n) throws RocksDBException {
        byte[] probe = PROBE.get();
        int size = db.get(key(shard, key), probe);
        return size == RocksDB.NOT_FOUND ? null : Arrays.copyOf(probe, Math.min(n, size));
    }

    /**
     * {@link #getInline} for each key; once the values returned reach {@code maxTotalInline} bytes,
     * larger ones than what is left are {@link #CHUNKED} too, so one answer stays bounded.
     */
    List<byte[]> multiGetInline(int shard, List<byte[]> keys, int maxInline, long maxTotalInline)
            throws RocksDBException {
        List<byte[]> values = new ArrayList<>(keys.size());
        long left = maxTotalInline;
        for (byte[] key : keys) {
            byte[] value =
                    getStoredInline(key(shard, key), (int) Math.max(0, Math.min(maxInline, left)));
            if (value != null && value != CHUNKED) {
                left -= value.length;
            }
            values.add(value);
        }
        return values;
    }

    /**
     * Reads one page of {@code [start, end)} of the shard restricted to {@code prefix}. Empty
     * start, end or prefix means unbounded within the shard. At least one entry is returned when
     * any exists, even a larger one than {@code maxBytes}, so a scan always makes progress. Values
     * larger than {@code maxInline} are {@link #CHUNKED} (counted as their key in the page's
     * bytes), or, with {@code valuePrefixBytes > 0}, only each value's first bytes are read (an
     * expiry sweep needs no more than its timestamp).
     */
    ScanPage scan(
            int shard,
            byte[] start,
            byte[] end,
            byte[] prefix,
            int maxEntries,
            long maxBytes,
            boolean keysOnly,
            int maxInline,
            int valuePrefixBytes)
            throws RocksDBException {
        byte[] lower = start;
        if (prefix.length > 0 && Arrays.compareUnsigned(prefix, lower) > 0) {
            lower = prefix;
        }
        byte[] upper = end;
        if (prefix.length > 0) {
            byte[] prefixEnd = ScanRange.prefixSuccessor(prefix);
            if (prefixEnd.length > 0
                    && (upper.length == 0 || Arrays.compareUnsigned(prefixEnd, upper) < 0)) {
                upper = prefixEnd;
            }
        }
        if (upper.length > 0 && Arrays.compareUnsigned(lower, upper) >= 0) {
            return new ScanPage(List.of(), false, EMPTY);
        }
        byte[] storedUpper = upper.length == 0 ? rangeEnd(shard) : key(shard, upper);
        List<ScanPage.Entry> entries = new ArrayList<>();
        try (Slice upperSlice = new Slice(storedUpper);
                ReadOptions ro = new ReadOptions().setIterateUpperBound(upperSlice);
                RocksIterator it = db.newIterator(ro)) {
            it.seek(key(shard, lower));
            long bytes = 0;
            while (it.isValid() && entries.size() < maxEntries && bytes < maxBytes) {
                byte[] k = strip(it.key());
                byte[] value = keysOnly ? EMPTY : boundedValue(it, maxInline, valuePrefixBytes);
                entries.add(new ScanPage.Entry(k, value));
                bytes += k.length + value.length;
                it.next();
            }
            it.status();
            boolean hasMore = it.isValid();
            return new ScanPage(entries, hasMore, hasMore ? strip(it.key()) : EMPTY);
        }
    }

    private static byte[] boundedValue(RocksIterator it, int maxInline, int valuePrefixBytes) {
        if (maxInline == Integer.MAX_VALUE && valuePrefixBytes == 0) {
            return it.value();
        }
        byte[] probe = PROBE.get();
        int size = it.value(probe);
        if (valuePrefixBytes > 0) {
            return Arrays.copyOf(probe, Math.min(size, Math.min(valuePrefixBytes, probe.length)));
        }
        if (size > maxInline) {
            return CHUNKED;
        }
        return size <= probe.length ? Arrays.copyOf(probe, size) : it.value();
    }

    // ---- writes

    void write(WriteBatch batch) throws RocksDBException {
        db.write(resources.writeOptions(), batch);
    }

    /** Adds a delete of every key of {@code shard} to {@code batch}. */
    static void deleteShard(WriteBatch batch, int shard) throws RocksDBException {
        batch.deleteRange(rangeStart(shard), rangeEnd(shard));
    }

    /**
     * Deletes the ranges of shards {@code [fromShard, toShard)} with one range tombstone: the
     * garbage a store keeps of shards that are not its members.
     */
    void deleteShards(int fromShard, int toShard) throws RocksDBException {
        if (fromShard >= toShard) {
            return;
        }
        try (WriteBatch batch = new WriteBatch()) {
            batch.deleteRange(rangeStart(fromShard), rangeStart(toShard));
            write(batch);
        }
    }

    // ---- filter rebuilds

    /**
     * Opens a filter rebuild's pass over the keys of {@code shard} as of now: a RocksDB snapshot
     * and one iterator on it, read a page at a time. Close it before the instance closes.
     */
    KeyScan openKeyScan(int shard) {
        return new KeyScan(shard);
    }

    /**
     * One page of a filter rebuild's scan.
     *
     * @param keys how many hashes were written
     * @param bytes key and value bytes the page read
     * @param done whether the last key was read
     */
    record KeyPage(int keys, long bytes, boolean done) {}

    /**
     * A pass over every key of one shard in a snapshot. One iterator for the whole pass: a new one
     * per page would read the index blocks of every file again (they are not cached for it, see
     * below), which tripled the bytes read of a 10-million-key scan. The blocks it reads do not go
     * into the block cache, so a rebuild does not evict what reads need; readahead makes them few
     * large reads. Keys are hashed without their shard prefix: the filter holds the client's keys.
     * Used by one thread at a time.
     */
    final class KeyScan implements AutoCloseable {
        private static final long READAHEAD_BYTES = 2L << 20;

        private final Snapshot snapshot;
        private final Slice upper;
        private final ReadOptions readOptions;
        private final RocksIterator iterator;
        private byte[] key = new byte[256];
        private boolean closed;

        private KeyScan(int shard) {
            this.snapshot = db.getSnapshot();
            this.upper = new Slice(rangeEnd(shard));
            this.readOptions =
                    new ReadOptions()
                            .setSnapshot(snapshot)
                            .setFillCache(false)
                            .setReadaheadSize(READAHEAD_BYTES)
                            .setIterateUpperBound(upper);
            this.iterator = db.newIterator(readOptions);
            iterator.seek(rangeStart(shard));
        }

        /**
         * Hashes ({@link KeyHash}) up to {@code hashes.length} more keys; values are not copied,
         * only their length counted.
         */
        KeyPage next(long[] hashes) throws RocksDBException {
            int n = 0;
            long bytes = 0;
            while (iterator.isValid() && n < hashes.length) {
                int length = iterator.key(key);
                if (length > key.length) {
                    key = new byte[Math.max(length, 2 * key.length)];
                    iterator.key(key);
                }
                hashes[n++] = KeyHash.hash(key, PREFIX_BYTES, length - PREFIX_BYTES);
                bytes += length - PREFIX_BYTES + iterator.value(EMPTY);
                iterator.next();
            }
            iterator.status();
            return new KeyPage(n, bytes, !iterator.isValid());
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                iterator.close();
                readOptions.close();
                upper.close();
                db.releaseSnapshot(snapshot);
            }
        }
    }

    // ---- durability

    void flush() throws RocksDBException {
        try (FlushOptions fo = new FlushOptions().setWaitForFlush(true)) {
            db.flush(fo);
        }
        if (resources.walEnabled()) {
            db.flushWal(true);
        }
    }

    /** A RocksDB checkpoint (hard links to the SSTs) of the flushed data into a new directory. */
    void checkpoint(Path target) throws RocksDBException {
        flush();
        try (Checkpoint cp = Checkpoint.create(db)) {
            cp.createCheckpoint(target.toString());
        }
    }

    /** Whether the instance holds any key at all (one seek). */
    boolean isEmpty() {
        try (RocksIterator it = db.newIterator()) {
            it.seekToFirst();
            return !it.isValid();
        }
    }

    /** Whether {@code shard}'s range holds any key (one seek). */
    boolean hasKeys(int shard) {
        try (Slice upper = new Slice(rangeEnd(shard));
                ReadOptions ro = new ReadOptions().setIterateUpperBound(upper);
                RocksIterator it = db.newIterator(ro)) {
            it.seek(rangeStart(shard));
            return it.isValid();
        }
    }

    /**
     * Which of {@code shards} hold any key: one iterator for all of them, a seek per shard that has
     * keys or follows one that has (an empty store costs one seek), where {@link #hasKeys} makes an
     * iterator per shard (about 20 µs each: 0.6 s for 32,768 shards).
     */
    BitSet shardsWithKeys(BitSet shards) {
        BitSet withKeys = new BitSet();
        try (RocksIterator it = db.newIterator()) {
            int s = shards.nextSetBit(0);
            while (s >= 0) {
                it.seek(rangeStart(s));
                if (!it.isValid()) {
                    break;
                }
                byte[] k = it.key();
                int found = (k[0] & 0xff) << 8 | (k.length > 1 ? k[1] & 0xff : 0);
                if (found == s) {
                    withKeys.set(s);
                    s = shards.nextSetBit(s + 1);
                } else {
                    // Every shard from s up to the one found has no key.
                    s = shards.nextSetBit(found);
                }
            }
        }
        return withKeys;
    }

    long estimatedKeys() throws RocksDBException {
        return db.getLongProperty("rocksdb.estimate-num-keys");
    }

    /**
     * RocksDB's key estimate of the instance scaled by the share of its bytes in {@code shard}'s
     * range (RocksDB counts keys per instance only): what a filter rebuild is sized by; a low one
     * costs a second rebuild, never a wrong filter.
     */
    long estimatedKeys(int shard) throws RocksDBException {
        long keys = estimatedKeys();
        if (keys <= 0) {
            return 0;
        }
        try (Slice allStart = new Slice(rangeStart(0));
                Slice allEnd = new Slice(new byte[] {(byte) 0xff, (byte) 0xff});
                Slice start = new Slice(rangeStart(shard));
                Slice end = new Slice(rangeEnd(shard))) {
            long[] sizes =
                    db.getApproximateSizes(
                            List.of(new Range(start, end), new Range(allStart, allEnd)),
                            SizeApproximationFlag.INCLUDE_FILES,
                            SizeApproximationFlag.INCLUDE_MEMTABLES);
            if (sizes[1] <= 0) {
                return keys;
            }
            return Math.max(0, (long) ((double) keys * sizes[0] / sizes[1]));
        }
    }

    /** Adds this instance's properties to a node sample: seven JNI property reads. */
    void addProperties(RocksSample.Builder into) throws RocksDBException {
        into.memtableBytes += db.getLongProperty("rocksdb.cur-size-all-mem-tables");
        into.pendingCompactionBytes +=
                db.getLongProperty("rocksdb.estimate-pending-compaction-bytes");
        into.runningCompactions += db.getLongProperty("rocksdb.num-running-compactions");
        if (db.getLongProperty("rocksdb.is-write-stopped") != 0) {
            into.writeStoppedStores++;
        }
        if (db.getLongProperty("rocksdb.actual-delayed-write-rate") != 0) {
            into.writeDelayedStores++;
        }
        into.estimatedEntries += db.getLongProperty("rocksdb.estimate-num-keys");
        into.liveSstBytes += db.getLongProperty("rocksdb.live-sst-files-size");
    }

    /** Closes the instance; with {@code flush}, memtables reach disk first (the WAL may be off). */
    void close(boolean flush) throws RocksDBException {
        try {
            if (flush) {
                flush();
            }
        } finally {
            try {
                db.closeE();
            } finally {
                options.close();
            }
        }
    }

    @Override
    public void close() throws RocksDBException {
        close(true);
    }
}
