package io.taishan.benchmarks.state;

import java.util.Locale;

/**
 * The bytes that the loaded state of a benchmark takes in a remote store's cache, estimated from
 * the layout before the backend exists, because the cache is sized when the backend is made.
 *
 * <p>An entry is its store key, its value and the cache's own per-entry cost. The store key is what
 * Flink's RocksDB backend writes (key-group prefix, 1 byte for at most 128 key groups; the {@code
 * Long} key, 8; {@code VoidNamespace}, 1; a map's {@code Long} user key, 8) behind Taishan's 4-byte
 * state id. Values: a {@code Long}, 8; a map's {@code Double} with its null flag, 9; a one-element
 * list of {@code Long}, 8. The per-entry cost ({@value #ENTRY_OVERHEAD_BYTES} B: the cache's entry
 * header and the table, shard and incarnation in its key) is an assumption until the cache exists;
 * the cache's eviction count will tell whether {@code cache=all} held everything.
 */
public enum StateSize {
    VALUE(1, 4 + 1 + 8 + 1, 8),
    MAP(BenchmarkKeys.MAP_KEY_COUNT, 4 + 1 + 8 + 1 + 8, 1 + 8),
    LIST(1, 4 + 1 + 8 + 1, 8);

    public static final int ENTRY_OVERHEAD_BYTES = 64;

    /** Entries per loaded key. */
    public final int entriesPerKey;

    public final int keyBytes;
    public final int valueBytes;

    StateSize(int entriesPerKey, int keyBytes, int valueBytes) {
        this.entriesPerKey = entriesPerKey;
        this.keyBytes = keyBytes;
        this.valueBytes = valueBytes;
    }

    public int bytesPerEntry() {
        return keyBytes + valueBytes + ENTRY_OVERHEAD_BYTES;
    }

    public long entries(int setupKeyCount) {
        return (long) setupKeyCount * entriesPerKey;
    }

    public long estimate(int setupKeyCount) {
        return entries(setupKeyCount) * bytesPerEntry();
    }

    /** The state of a benchmark class of this suite, by its simple name. */
    public static StateSize ofBenchmark(String benchmarkClassSimpleName) {
        if (benchmarkClassSimpleName.startsWith("Map")) {
            return MAP;
        }
        if (benchmarkClassSimpleName.startsWith("List")) {
            return LIST;
        }
        return VALUE;
    }

    public String describe(int setupKeyCount) {
        return String.format(
                Locale.ROOT,
                "%,d entries × (%d B key + %d B value + %d B cache entry) = %,d B (%s)",
                entries(setupKeyCount),
                keyBytes,
                valueBytes,
                ENTRY_OVERHEAD_BYTES,
                estimate(setupKeyCount),
                ReadCache.mebibytes(estimate(setupKeyCount)));
    }
}
