package org.caffinitas.ohc.linked;

import java.lang.reflect.Field;
import java.nio.ByteOrder;
import org.caffinitas.ohc.OHCache;

/**
 * Taishan's narrow door into OHC's linked implementation (ohc-core 0.7.4): a lookup and a removal
 * that reuse a thread-confined key buffer, and value reads straight from the referenced entry.
 *
 * <p>Why it exists: {@code OHCacheLinkedImpl.get(K)} serializes the key into a {@code new
 * byte[keyLength]} on every call ({@code keySource}). C2's escape analysis removes the {@code
 * KeyBuffer} and {@code ByteBuffer} wrappers around it but never the array itself (its length is
 * not a compile-time constant), so each lookup allocated 48 bytes for a 26-byte key, hit or miss.
 * The public API has no other lookup entry point: {@code getDirect}, {@code containsKey} and {@code
 * remove} all go through {@code keySource}.
 *
 * <p>This class lives in OHC's package only to reach its package-private segment API ({@code
 * OffHeapLinkedMap.getEntry(KeyBuffer, ..)} and {@code removeEntry}); it reads four private fields
 * of {@code OHCacheLinkedImpl} once, by reflection, in {@link #attach}. Everything else (hash
 * table, W-TinyLFU, entry reference counting, allocation, puts, close) stays OHC's own code. So
 * ohc-core and this class must be loaded by the same class loader (they are, when both sit in
 * Flink's {@code lib/} or both in one job jar), and {@link #attach} fails loudly on any other OHC
 * version's layout rather than guessing.
 *
 * <p>Memory safety: {@link #find} returns an entry whose reference count it has incremented, as
 * OHC's own {@code get} does; eviction, replacement and close only unlink such an entry, and the
 * memory is freed by whoever drops the last reference ({@link #release}). Reads go through {@code
 * Uns} with the entry's base address, so OHC's {@code debugOffHeapAccess} mode checks every one of
 * them against the allocation's bounds.
 */
public final class TaishanLinkedAccess {
    /** Keys up to this many bytes use a pooled buffer; longer ones allocate one per call. */
    public static final int MAX_POOLED_KEY_LENGTH = 256;

    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    // KeyBuffer has no per-cache state (its hash is recomputed by finish()), so one pool per thread
    // serves every cache; a slot per length because KeyBuffer's array is final and exactly sized.
    private static final ThreadLocal<Key[]> POOL =
            ThreadLocal.withInitial(() -> new Key[MAX_POOLED_KEY_LENGTH + 1]);

    private final OHCacheLinkedImpl<?, ?> cache;
    private final OffHeapLinkedMap[] maps;
    private final Hasher hasher;
    private final long segmentMask;
    private final int segmentShift;

    private TaishanLinkedAccess(
            OHCacheLinkedImpl<?, ?> cache,
            OffHeapLinkedMap[] maps,
            Hasher hasher,
            long segmentMask,
            int segmentShift) {
        this.cache = cache;
        this.maps = maps;
        this.hasher = hasher;
        this.segmentMask = segmentMask;
        this.segmentShift = segmentShift;
    }

    /**
     * Attaches to a cache built by {@code OHCacheBuilder} without {@code chunked}.
     *
     * @throws IllegalStateException if the cache is not OHC's linked implementation or its fields
     *     are not the ones of ohc-core 0.7.4
     */
    public static TaishanLinkedAccess attach(OHCache<?, ?> cache) {
        if (!(cache instanceof OHCacheLinkedImpl)) {
            throw new IllegalStateException(
                    "expected OHC's linked implementation, got " + cache.getClass().getName());
        }
        try {
            OffHeapLinkedMap[] maps = (OffHeapLinkedMap[]) field("maps").get(cache);
            Hasher hasher = (Hasher) field("hasher").get(cache);
            long segmentMask = field("segmentMask").getLong(cache);
            int segmentShift = field("segmentShift").getInt(cache);
            if (maps == null || maps.length == 0 || hasher == null) {
                throw new IllegalStateException("OHC cache is closed or not initialised");
            }
            return new TaishanLinkedAccess(
                    (OHCacheLinkedImpl<?, ?>) cache, maps, hasher, segmentMask, segmentShift);
        } catch (ReflectiveOperationException | ClassCastException | SecurityException e) {
            throw new IllegalStateException(
                    "ohc-core's internal layout is not the one this class was written for (0.7.4)",
                    e);
        }
    }

    private static Field field(String name) throws NoSuchFieldException {
        Field f = OHCacheLinkedImpl.class.getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }

    /**
     * A serialized key buffer of exactly {@code length} bytes, confined to the calling thread and
     * valid until this thread's next call with the same length. Fill {@link Key#bytes()} completely
     * before passing it to {@link #find} or {@link #remove}.
     */
    public static Key key(int length) {
        if (length <= 0) {
            throw new IllegalArgumentException("key length " + length);
        }
        if (length > MAX_POOLED_KEY_LENGTH) {
            return new Key(length);
        }
        Key[] pool = POOL.get();
        Key key = pool[length];
        if (key == null) {
            key = new Key(length);
            pool[length] = key;
        }
        return key;
    }

    /**
     * Looks the key up, counting as a use for eviction. Returns the entry's address with one more
     * reference held by the caller, who must {@link #release} it; 0 if absent.
     */
    public long find(Key key) {
        KeyBuffer kb = key.buffer.finish(hasher);
        return segment(kb.hash()).getEntry(kb, true, true);
    }

    /** Removes the key's entry, if any; returns whether there was one. */
    public boolean remove(Key key) {
        KeyBuffer kb = key.buffer.finish(hasher);
        return segment(kb.hash()).removeEntry(kb);
    }

    /**
     * Unlinks exactly this entry if it is still in the table, and does nothing if a put has
     * replaced it meanwhile (unlike a removal by key, it cannot drop a newer value). The caller's
     * own reference stays valid until {@link #release}.
     */
    public void unlink(long entry) {
        segment(HashEntries.getHash(entry)).removeEntry(entry);
    }

    /** Drops the reference {@link #find} handed out; frees the entry if it was the last one. */
    public static void release(long entry) {
        HashEntries.dereference(entry);
    }

    /** The serialized value's length in bytes. */
    public static int valueLength(long entry) {
        return HashEntries.getValueLen(entry);
    }

    /** One byte of the serialized value. */
    public static byte valueByte(long entry, int offset) {
        return Uns.getByte(entry, valueOffset(entry) + offset);
    }

    /** Eight bytes of the serialized value, read big-endian (as OHC's ByteBuffers write them). */
    public static long valueLongBigEndian(long entry, int offset) {
        long v = Uns.getLong(entry, valueOffset(entry) + offset);
        return LITTLE_ENDIAN ? Long.reverseBytes(v) : v;
    }

    /** Copies {@code dst.length} bytes of the serialized value, from {@code offset}, into dst. */
    public static void copyValue(long entry, int offset, byte[] dst) {
        Uns.copyMemory(entry, valueOffset(entry) + offset, dst, 0, dst.length);
    }

    private static long valueOffset(long entry) {
        return Util.ENTRY_OFF_DATA + Util.roundUpTo8(HashEntries.getKeyLen(entry));
    }

    /** Entries OHC evicted to make room, over all segments (read without locks, as OHC does). */
    public long evictedEntries() {
        long evicted = 0L;
        for (OffHeapLinkedMap map : maps) {
            evicted += map.evictedEntries();
        }
        return evicted;
    }

    /** OHC's segment count (a power of two). */
    public int segments() {
        return maps.length;
    }

    private OffHeapLinkedMap segment(long hash) {
        return maps[(int) ((hash & segmentMask) >>> segmentShift)];
    }

    /** A key buffer; see {@link #key(int)}. */
    public static final class Key {
        final KeyBuffer buffer;

        private Key(int length) {
            buffer = new KeyBuffer(length);
        }

        /** The buffer to serialize the key into; exactly the requested length. */
        public byte[] bytes() {
            return buffer.buffer;
        }
    }
}
