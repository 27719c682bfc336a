package io.taishan.cache;

import com.sun.management.ThreadMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import org.caffinitas.ohc.CacheSerializer;
import org.caffinitas.ohc.Eviction;
import org.caffinitas.ohc.OHCache;
import org.caffinitas.ohc.OHCacheBuilder;

/**
 * Measures what the module README reports: bytes allocated and nanoseconds per get (hit, miss,
 * absent hit), put and invalidate, for both implementations and for OHC's own {@code get(K)}; the
 * heap bytes per on-heap entry (to check {@link OnHeapStateCache#ENTRY_OVERHEAD}); the resident
 * memory per off-heap entry against OHC's accounting (argument {@code resident}, in a fresh JVM).
 * Not a test: run it by hand (see README).
 *
 * <p>Allocation comes from {@code ThreadMXBean.getThreadAllocatedBytes} around a loop of 1M calls
 * on one thread, after warm-up rounds (the JIT has compiled and inlined by then; the figure printed
 * is the last round). Times are wall clock over the same loops: single-threaded, no contention.
 */
public final class CacheCostHarness {

    private static final int KEYS = 100_000;
    private static final int ROUNDS = 10;
    private static final ThreadMXBean MX = (ThreadMXBean) ManagementFactory.getThreadMXBean();

    private static long sink;

    /** With the argument {@code resident}, only the resident-memory figure, in a JVM of its own. */
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("resident")) {
            // First thing in a fresh JVM: no freed malloc memory from earlier caches to reuse.
            offHeapResidentBytes();
            return;
        }
        System.out.printf(
                "java %s, %s, %d cpus, allocator=%s%n",
                System.getProperty("java.vm.version"),
                System.getProperty("os.arch"),
                Runtime.getRuntime().availableProcessors(),
                System.getProperty(OffHeapStateCache.ALLOCATOR_PROPERTY, "(unset)"));
        byte[][] keys = keys("key-", KEYS);
        byte[][] missing = keys("missing-", KEYS);
        byte[][] absent = keys("absent-", KEYS);
        byte[] value = new byte[100];
        System.out.printf("keys of %d bytes, values of %d bytes%n", keys[0].length, value.length);

        for (CacheType type : new CacheType[] {CacheType.OFF_HEAP, CacheType.ON_HEAP}) {
            StateCacheRegistry registry = new StateCacheRegistry(InstantSource.system(), 0);
            try (StateCacheHandle cache = registry.acquire(type, 256L << 20)) {
                long space = cache.newSpace();
                for (int i = 0; i < KEYS; i++) {
                    cache.put(space, keys[i], value, StateCache.NEVER);
                    cache.putAbsent(space, absent[i], StateCache.NEVER);
                }
                measure(
                        type + " get hit",
                        () -> each(keys, k -> sink += cache.get(space, k).length));
                measure(
                        type + " get miss",
                        () -> each(missing, k -> sink += cache.get(space, k) == null ? 1 : 0));
                measure(
                        type + " get absent hit",
                        () ->
                                each(
                                        absent,
                                        k ->
                                                sink +=
                                                        cache.get(space, k) == StateCache.ABSENT
                                                                ? 1
                                                                : 0));
                measure(
                        type + " put (replace)",
                        () -> each(keys, k -> cache.put(space, k, value, StateCache.NEVER)));
                long timed = System.currentTimeMillis() + 3_600_000L;
                measure(
                        type + " put timed (replace)",
                        () -> each(keys, k -> cache.put(space, k, value, timed)));
                measure(
                        type + " get hit timed",
                        () -> each(keys, k -> sink += cache.get(space, k).length));
                measure(
                        type + " invalidate + put",
                        () ->
                                each(
                                        keys,
                                        k -> {
                                            cache.invalidate(space, k);
                                            cache.put(space, k, value, StateCache.NEVER);
                                        }));
                System.out.println("  " + cache.stats());
            }
        }
        ohcOwnGet(keys, missing, value);
        onHeapEntryBytes();
        System.out.println(sink == 42 ? "" : "done");
    }

    /** OHC's public get(K) with byte[] keys, for the key allocation the bridge avoids. */
    private static void ohcOwnGet(byte[][] keys, byte[][] missing, byte[] value) throws Exception {
        CacheSerializer<byte[]> bytes =
                new CacheSerializer<>() {
                    public void serialize(byte[] v, ByteBuffer b) {
                        b.put(v);
                    }

                    public byte[] deserialize(ByteBuffer b) {
                        byte[] r = new byte[b.remaining()];
                        b.get(r);
                        return r;
                    }

                    public int serializedSize(byte[] v) {
                        return v.length;
                    }
                };
        try (OHCache<byte[], byte[]> ohc =
                OHCacheBuilder.<byte[], byte[]>newBuilder()
                        .keySerializer(bytes)
                        .valueSerializer(bytes)
                        .capacity(256L << 20)
                        .eviction(Eviction.W_TINY_LFU)
                        .build()) {
            for (byte[] k : keys) {
                ohc.put(k, value);
            }
            measure("OHC get(K) hit", () -> each(keys, k -> sink += ohc.get(k).length));
            measure(
                    "OHC get(K) miss",
                    () -> each(missing, k -> sink += ohc.get(k) == null ? 1 : 0));
        }
    }

    /** Heap bytes per on-heap entry beyond its two arrays, against the weigher's constant. */
    private static void onHeapEntryBytes() {
        int n = 200_000;
        OnHeapStateCache cache = new OnHeapStateCache(1L << 30, InstantSource.system());
        byte[] value = new byte[100];
        long before = usedHeap();
        for (int i = 0; i < n; i++) {
            // keys made here die at once: only the cache's copies stay reachable
            cache.put(
                    1,
                    ("key-" + (1_000_000 + i) + "-abcdefghijklmnop")
                            .getBytes(StandardCharsets.UTF_8),
                    value,
                    StateCache.NEVER);
        }
        cache.cleanUp();
        long after = usedHeap();
        int keyLength = ("key-" + 1_000_000 + "-abcdefghijklmnop").length();
        double perEntry = (after - before) / (double) n;
        long arrays =
                OnHeapStateCache.weigh(keyLength, value.length) - OnHeapStateCache.ENTRY_OVERHEAD;
        System.out.printf(
                "ON_HEAP heap per entry: %.1f bytes measured, %d of them the two arrays -> overhead %.1f (weigher assumes %d)%n",
                perEntry, arrays, perEntry - arrays, OnHeapStateCache.ENTRY_OVERHEAD);
        sink += cache.stats().entries();
        cache.close();
    }

    /** Resident memory of a full off-heap cache against OHC's accounting of it. */
    private static void offHeapResidentBytes() throws Exception {
        long capacity = 256L << 20;
        long rssBefore = rss();
        OffHeapStateCache cache = new OffHeapStateCache(capacity, 0, InstantSource.system());
        byte[] value = new byte[100];
        byte[] key = new byte[28];
        for (int i = 0; i < 2_000_000; i++) {
            ByteBuffer.wrap(key).putInt(i);
            cache.put(1, key, value, StateCache.NEVER);
        }
        long grown = rss() - rssBefore;
        CacheStats s = cache.stats();
        System.out.printf(
                "OFF_HEAP %d MiB cache, 2M puts of 28+100 bytes: %d entries, OHC counts %d bytes (%.1f/entry),"
                        + " resident memory grew %d bytes (%.1f/entry, %.2fx the capacity)%n",
                capacity >> 20,
                s.entries(),
                s.bytesUsed(),
                s.bytesUsed() / (double) s.entries(),
                grown,
                grown / (double) s.entries(),
                grown / (double) capacity);
        cache.close();
        // glibc keeps freed chunks for reuse rather than returning them: this shows what stays
        // mapped, not a leak (the tests check OHC's own allocation tracker for that).
        System.out.printf(
                "OFF_HEAP after close: resident memory %+.1f MiB against before the cache%n",
                (rss() - rssBefore) / 1048576.0);
    }

    private static long rss() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }

    private static long usedHeap() {
        for (int i = 0; i < 4; i++) {
            System.gc();
        }
        Runtime rt = Runtime.getRuntime();
        return rt.totalMemory() - rt.freeMemory();
    }

    private interface KeyOp {
        void run(byte[] key);
    }

    private static void each(byte[][] keys, KeyOp op) {
        for (int r = 0; r < 10; r++) {
            for (byte[] k : keys) {
                op.run(k);
            }
        }
    }

    private static void measure(String name, Runnable loop) {
        long tid = Thread.currentThread().getId();
        long ops = 10L * KEYS;
        double[] bytes = new double[ROUNDS];
        double[] ns = new double[ROUNDS];
        for (int round = 0; round < ROUNDS; round++) {
            long a0 = MX.getThreadAllocatedBytes(tid);
            long t0 = System.nanoTime();
            loop.run();
            long t1 = System.nanoTime();
            long a1 = MX.getThreadAllocatedBytes(tid);
            bytes[round] = (a1 - a0) / (double) ops;
            ns[round] = (t1 - t0) / (double) ops;
        }
        // The first rounds run in the interpreter and C1; the median of the rest is the figure.
        double[] b = java.util.Arrays.copyOfRange(bytes, ROUNDS / 2, ROUNDS);
        double[] t = java.util.Arrays.copyOfRange(ns, ROUNDS / 2, ROUNDS);
        java.util.Arrays.sort(b);
        java.util.Arrays.sort(t);
        System.out.printf(
                "%-32s %7.1f B/op %7.1f ns/op (min %.1f)%n",
                name, b[b.length / 2], t[t.length / 2], t[0]);
    }

    private static byte[][] keys(String prefix, int n) {
        byte[][] keys = new byte[n][];
        for (int i = 0; i < n; i++) {
            keys[i] =
                    (prefix + (1_000_000 + i) + "-abcdefghijklmnop")
                            .getBytes(StandardCharsets.UTF_8);
        }
        return keys;
    }
}
