package io.taishan.kv.server.storage;

import io.taishan.bloom.KeyHash;
import io.taishan.kv.client.ScanRange;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.annotation.Nullable;
import org.rocksdb.Checkpoint;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;
import org.rocksdb.Snapshot;
import org.rocksdb.WriteBatch;

/** One open RocksDB instance: the live data of one shard. Not concerned with locking. */
final class ShardDb implements AutoCloseable {
    private static final byte[] EMPTY = new byte[0];

    private final RocksResources resources;
    private final Options options;
    private final RocksDB db;

    private ShardDb(RocksResources resources, Options options, RocksDB db) {
        this.resources = resources;
        this.options = options;
        this.db = db;
    }

    static ShardDb open(RocksResources resources, Path dir) throws RocksDBException {
        Options options = resources.newShardOptions();
        try {
            return new ShardDb(resources, options, RocksDB.open(options, dir.toString()));
        } catch (RocksDBException | RuntimeException e) {
            options.close();
            throw e;
        }
    }

    byte[] get(byte[] key) throws RocksDBException {
        return db.get(key);
    }

    List<byte[]> multiGet(List<byte[]> keys) throws RocksDBException {
        return db.multiGetAsList(keys);
    }

    void write(WriteBatch batch) throws RocksDBException {
        db.write(resources.writeOptions(), batch);
    }

    /**
     * Reads one page of {@code [start, end)} restricted to {@code prefix}. Empty start, end or
     * prefix means unbounded. At least one entry is returned when any exists, even a larger one
     * than {@code maxBytes}, so a scan always makes progress.
     */
    ScanPage scan(
            byte[] start,
            byte[] end,
            byte[] prefix,
            int maxEntries,
            long maxBytes,
            boolean keysOnly)
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
        List<ScanPage.Entry> entries = new ArrayList<>();
        try (Slice upperSlice = upper.length == 0 ? null : new Slice(upper);
                ReadOptions ro = new ReadOptions()) {
            if (upperSlice != null) {
                ro.setIterateUpperBound(upperSlice);
            }
            try (RocksIterator it = db.newIterator(ro)) {
                it.seek(lower);
                long bytes = 0;
                while (it.isValid() && entries.size() < maxEntries && bytes < maxBytes) {
                    byte[] key = it.key();
                    byte[] value = keysOnly ? EMPTY : it.value();
                    entries.add(new ScanPage.Entry(key, value));
                    bytes += key.length + value.length;
                    it.next();
                }
                it.status();
                boolean hasMore = it.isValid();
                return new ScanPage(entries, hasMore, hasMore ? it.key() : EMPTY);
            }
        }
    }

    /** A consistent view for a filter rebuild's scan; release it before the instance closes. */
    Snapshot getSnapshot() {
        return db.getSnapshot();
    }

    void releaseSnapshot(Snapshot snapshot) {
        db.releaseSnapshot(snapshot);
    }

    /** A key buffer a scan reuses, so reading a key allocates nothing. */
    static final class KeyBuffer {
        byte[] bytes = new byte[256];
    }

    /**
     * One page of a filter rebuild's scan.
     *
     * @param keys how many hashes were written
     * @param bytes key and value bytes the page read
     * @param nextKey where the next page starts, null after the last key
     */
    record KeyPage(int keys, long bytes, @Nullable byte[] nextKey) {}

    /**
     * Hashes ({@link KeyHash}) up to {@code hashes.length} keys of {@code snapshot}, from {@code
     * from} on. Values are not copied, only their length counted. The page does not go into the
     * block cache, so a rebuild does not evict what reads need.
     */
    KeyPage hashKeys(Snapshot snapshot, byte[] from, long[] hashes, KeyBuffer buffer)
            throws RocksDBException {
        try (ReadOptions ro = new ReadOptions().setSnapshot(snapshot).setFillCache(false);
                RocksIterator it = db.newIterator(ro)) {
            it.seek(from);
            int n = 0;
            long bytes = 0;
            while (it.isValid() && n < hashes.length) {
                int length = it.key(buffer.bytes);
                if (length > buffer.bytes.length) {
                    buffer.bytes = new byte[Math.max(length, 2 * buffer.bytes.length)];
                    it.key(buffer.bytes);
                }
                hashes[n++] = KeyHash.hash(buffer.bytes, 0, length);
                bytes += length + it.value(EMPTY);
                it.next();
            }
            it.status();
            return new KeyPage(n, bytes, it.isValid() ? it.key() : null);
        }
    }

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

    long estimatedKeys() throws RocksDBException {
        return db.getLongProperty("rocksdb.estimate-num-keys");
    }

    long memtableBytes() throws RocksDBException {
        return db.getLongProperty("rocksdb.cur-size-all-mem-tables");
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
