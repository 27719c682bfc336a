package io.taishan.cache;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.time.InstantSource;
import java.util.Objects;
import org.caffinitas.ohc.CacheSerializer;
import org.caffinitas.ohc.Eviction;
import org.caffinitas.ohc.OHCache;
import org.caffinitas.ohc.OHCacheBuilder;
import org.caffinitas.ohc.linked.TaishanLinkedAccess;

/**
 * {@link CacheType#OFF_HEAP}: the entries live in OHC ({@code org.caffinitas.ohc:ohc-core}, linked
 * implementation), outside the Java heap, so a cache of gigabytes costs the GC nothing.
 *
 * <h2>Layout</h2>
 *
 * An OHC key is {@code [space: 8 bytes big-endian][key bytes][0x00]}: injective (the length fixes
 * where the key ends), and the constant last byte is there because OHC 0.7.4's {@code
 * KeyBuffer.compareKey} never compares a key's last byte (its byte loop stops at {@code length -
 * 1}): two keys that differ only there and share the 64-bit hash would match. With the pad, the
 * byte it skips is always equal, so the comparison covers all of {@code (space, key)}. An OHC value
 * is {@code [tag][expireAt: 8 bytes, only if timed][value bytes]}, the tag saying absent or not,
 * timed or not.
 *
 * <h2>Eviction: LRU, not OHC's W-TinyLFU</h2>
 *
 * OHC's {@code W_TINY_LFU} does not keep to its capacity when entry sizes vary: to admit a window
 * entry into the main area it evicts one main entry, whatever the two sizes, so a main area of many
 * small entries fills up with as many large ones. Measured: a 1 MiB cache holding 13k small
 * entries, then given frequently read 2 KB values, held 3.2 MiB by OHC's own count. A cache sized
 * to Flink's managed memory must not grow past it, so this class uses OHC's {@code LRU}, which
 * evicts from the tail until the new entry fits: after every put, each segment is within its share.
 * The on-heap cache keeps W-TinyLFU (Caffeine's weighs correctly).
 *
 * <h2>Expiry</h2>
 *
 * Checked by this class on every read against its {@link InstantSource}, not by OHC: OHC's
 * per-entry expiry ({@code timeouts(true)}) keeps all timed entries of a segment in one unsorted
 * list (in 0.7.4 its slot index is always 0: {@code (expireAt >> 55) & (63L << 56)}) and scans it
 * on every replace, removal and eviction of a timed entry: measured 3 µs per replacing put with 10k
 * timed entries, 75 µs with 400k. Its only other use, sweeping expired entries before an LRU
 * eviction, is what LRU order does anyway: an expired entry nobody reads drifts to the tail and
 * goes. An expired entry found by a read is unlinked (that exact entry, never a newer value put
 * meanwhile) and counted as an expiration.
 *
 * <h2>Cost model</h2>
 *
 * <ul>
 *   <li>{@code get}: one lookup under one segment's spin lock (segments: OHC's default, twice the
 *       processors); the only allocation on a hit is the returned array, none on a miss or an
 *       absent hit, for keys up to {@value TaishanLinkedAccess#MAX_POOLED_KEY_LENGTH} - 9 bytes:
 *       the serialized key goes into a per-thread reusable buffer through {@link
 *       TaishanLinkedAccess} instead of OHC's {@code get}, which allocates a key array per call.
 *       Untimed entries read no clock.
 *   <li>{@code put}: OHC's own put: one {@code malloc} of the entry, key and value copied into it;
 *       the old entry is freed once no reader holds it. No heap allocation once compiled (escape
 *       analysis removes the key and value holders and OHC's ByteBuffer views).
 *   <li>Bytes counted: OHC's own accounting, {@code 64 + roundUp8(keyLength + 9) + 1 + (timed ? 8 :
 *       0) + valueLength} per entry. Not counted: malloc's own overhead per allocation and OHC's
 *       hash table (8 bytes per bucket, sized here for 128-byte entries, doubling at a load of
 *       0.75).
 *   <li>Each segment gets {@code capacity / segments}; an entry larger than the first capacity's
 *       segment share is not kept (its put drops the key's older entry).
 *   <li>Capacity changes do not evict by themselves: after a decrease, a segment above its new
 *       share evicts at its next put.
 * </ul>
 *
 * <h2>Allocator</h2>
 *
 * OHC allocates with JNA's {@code malloc} unless the system property {@code
 * org.caffinitas.ohc.allocator} says {@code unsafe}. Loading this class sets it to {@code unsafe}
 * when it is unset (OHC reads it once, when its {@code Uns} class loads): same speed here (a put
 * took 400-450 ns either way), and no native library to extract into {@code java.io.tmpdir}, which
 * fails on hosts that mount it {@code noexec}. Both need no JVM flags on Java 17.
 */
public final class OffHeapStateCache extends SharedStateCache {

    static final String ALLOCATOR_PROPERTY = "org.caffinitas.ohc.allocator";

    static {
        if (System.getProperty(ALLOCATOR_PROPERTY) == null) {
            System.setProperty(ALLOCATOR_PROPERTY, "unsafe");
        }
    }

    /** Bytes the serialized key adds to the caller's key: the space and the pad. */
    static final int KEY_OVERHEAD = Long.BYTES + 1;

    private static final byte KEY_PAD = 0;
    private static final byte TAG_ABSENT = 1;
    private static final byte TAG_TIMED = 2;
    // Sizes the initial hash table: 8 bytes per bucket, so about 3% of the capacity up front; OHC
    // doubles a segment's table at a load of 0.75 when entries are smaller.
    private static final int ESTIMATED_ENTRY_BYTES = 256;

    private final OHCache<PutKey, PutValue> ohc;
    private final TaishanLinkedAccess access;
    private final InstantSource clock;
    private boolean closed;

    /**
     * @param segments OHC segments, a power of two; 0 for OHC's default (twice the processors)
     */
    OffHeapStateCache(long capacity, int segments, InstantSource clock) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be positive: " + capacity);
        }
        this.clock = Objects.requireNonNull(clock, "clock");
        OHCacheBuilder<PutKey, PutValue> builder =
                OHCacheBuilder.<PutKey, PutValue>newBuilder()
                        .keySerializer(KEYS)
                        .valueSerializer(VALUES)
                        .capacity(capacity)
                        .eviction(Eviction.LRU)
                        .timeouts(false);
        if (segments > 0) {
            builder.segmentCount(segments);
        }
        builder.hashTableSize(buckets(capacity / builder.getSegmentCount()));
        this.ohc = builder.build();
        try {
            this.access = TaishanLinkedAccess.attach(ohc);
        } catch (RuntimeException e) {
            closeOhc();
            throw e;
        }
    }

    private static int buckets(long segmentCapacity) {
        long entries = Math.max(1024, Math.min(1 << 20, segmentCapacity / ESTIMATED_ENTRY_BYTES));
        return Integer.highestOneBit((int) entries);
    }

    @Override
    public byte[] get(long space, byte[] key) {
        long entry = access.find(serializedKey(space, key));
        if (entry == 0L) {
            misses.increment();
            return null;
        }
        try {
            byte tag = TaishanLinkedAccess.valueByte(entry, 0);
            int offset = 1;
            if ((tag & TAG_TIMED) != 0) {
                long expireAt = TaishanLinkedAccess.valueLongBigEndian(entry, 1);
                if (expireAt <= clock.millis()) {
                    access.unlink(entry);
                    expirations.increment();
                    misses.increment();
                    return null;
                }
                offset += Long.BYTES;
            }
            if ((tag & TAG_ABSENT) != 0) {
                absentHits.increment();
                return ABSENT;
            }
            byte[] value = new byte[TaishanLinkedAccess.valueLength(entry) - offset];
            TaishanLinkedAccess.copyValue(entry, offset, value);
            hits.increment();
            return value;
        } finally {
            TaishanLinkedAccess.release(entry);
        }
    }

    @Override
    public void put(long space, byte[] key, byte[] value, long expireAtMillis) {
        Objects.requireNonNull(value, "value");
        if (value == ABSENT) {
            putAbsent(space, key, expireAtMillis);
        } else {
            store(space, key, (byte) 0, value, expireAtMillis);
        }
    }

    @Override
    public void putAbsent(long space, byte[] key, long expireAtMillis) {
        store(space, key, TAG_ABSENT, ABSENT, expireAtMillis);
    }

    private void store(long space, byte[] key, byte tag, byte[] value, long expireAtMillis) {
        Objects.requireNonNull(key, "key");
        puts.increment();
        if (expireAtMillis != NEVER) {
            if (expireAtMillis <= clock.millis()) {
                invalidate(space, key);
                return;
            }
            tag |= TAG_TIMED;
        }
        // A false return (entry too large, or no room even after eviction) has already removed
        // the key's older entry inside OHC, so nothing stale survives it.
        ohc.put(new PutKey(space, key), new PutValue(tag, expireAtMillis, value));
    }

    @Override
    public void invalidate(long space, byte[] key) {
        access.remove(serializedKey(space, key));
    }

    private static TaishanLinkedAccess.Key serializedKey(long space, byte[] key) {
        TaishanLinkedAccess.Key k = TaishanLinkedAccess.key(key.length + KEY_OVERHEAD);
        byte[] b = k.bytes();
        for (int i = 7; i >= 0; i--) {
            b[i] = (byte) space;
            space >>>= 8;
        }
        System.arraycopy(key, 0, b, Long.BYTES, key.length);
        b[b.length - 1] = KEY_PAD;
        return k;
    }

    @Override
    public CacheType type() {
        return CacheType.OFF_HEAP;
    }

    // Synchronized with close only: OHC's close nulls its segment array, which the sums below walk.
    @Override
    public synchronized CacheStats stats() {
        if (closed) {
            return CacheStats.EMPTY;
        }
        long capacity = ohc.capacity();
        return new CacheStats(
                hits.sum(),
                absentHits.sum(),
                misses.sum(),
                puts.sum(),
                access.evictedEntries(),
                expirations.sum(),
                capacity - ohc.freeCapacity(),
                capacity,
                ohc.size());
    }

    // OHC's LRU segments change their free capacity under their lock; the registry never calls
    // this concurrently, which is all OHC's unsynchronized capacity field needs.
    @Override
    void setCapacity(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("capacity must be positive: " + bytes);
        }
        ohc.setCapacity(bytes);
    }

    @Override
    synchronized void close() {
        closed = true;
        closeOhc();
    }

    private void closeOhc() {
        try {
            ohc.close();
        } catch (IOException e) {
            // OHCacheLinkedImpl.close throws nothing; the interface inherits Closeable's signature.
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public String toString() {
        return "OffHeapStateCache" + stats();
    }

    /** The key of a put; OHC serializes it straight into the new entry, never keeps the object. */
    private record PutKey(long space, byte[] key) {}

    /** The value of a put, see {@link #VALUES}. */
    private record PutValue(byte tag, long expireAt, byte[] value) {}

    private static final CacheSerializer<PutKey> KEYS =
            new CacheSerializer<>() {
                @Override
                public void serialize(PutKey k, ByteBuffer buf) {
                    buf.putLong(k.space).put(k.key).put(KEY_PAD);
                }

                @Override
                public PutKey deserialize(ByteBuffer buf) {
                    // Keys are only read by OHC's iterators and persistence, which this class never
                    // uses.
                    throw new UnsupportedOperationException();
                }

                @Override
                public int serializedSize(PutKey k) {
                    return k.key.length + KEY_OVERHEAD;
                }
            };

    private static final CacheSerializer<PutValue> VALUES =
            new CacheSerializer<>() {
                @Override
                public void serialize(PutValue v, ByteBuffer buf) {
                    buf.put(v.tag);
                    if ((v.tag & TAG_TIMED) != 0) {
                        buf.putLong(v.expireAt);
                    }
                    buf.put(v.value);
                }

                @Override
                public PutValue deserialize(ByteBuffer buf) {
                    // Values are read through TaishanLinkedAccess, never through OHC's get.
                    throw new UnsupportedOperationException();
                }

                @Override
                public int serializedSize(PutValue v) {
                    return 1 + ((v.tag & TAG_TIMED) != 0 ? Long.BYTES : 0) + v.value.length;
                }
            };
}
