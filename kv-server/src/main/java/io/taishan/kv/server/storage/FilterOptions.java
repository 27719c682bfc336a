package io.taishan.kv.server.storage;

import io.taishan.bloom.FilterSizing;

/**
 * How the node keeps its shards' Bloom filters (see {@link NodeFilters}).
 *
 * @param targetFpp false-positive rate of a filter at capacity ({@code filter.target-fpp})
 * @param maxShardBytes one shard filter's size cap ({@code filter.max-shard-bytes}); a shard with
 *     more keys than that holds gets a higher false-positive rate, never a false negative
 * @param maxMemoryBytes the node's limit for live and rebuilding filters ({@code
 *     filter.max-memory-bytes}); a filter that does not fit is unavailable, never partial
 * @param rebuildThreads background rebuild scans at once ({@code filter.rebuild-threads})
 * @param rebuildBytesPerSecond bytes (keys and values) all rebuild scans may read per second
 *     together ({@code filter.rebuild-bytes-per-second}); 0 for no limit
 * @param maxConcurrentFetches filter copies being sent to clients at once ({@code
 *     filter.max-concurrent-fetches}); further fetches wait their turn
 */
public record FilterOptions(
        double targetFpp,
        long maxShardBytes,
        long maxMemoryBytes,
        int rebuildThreads,
        long rebuildBytesPerSecond,
        int maxConcurrentFetches) {

    public static final FilterOptions DEFAULTS =
            new FilterOptions(0.01, 64L << 20, 512L << 20, 1, 64L << 20, 8);

    public FilterOptions {
        // FilterSizing checks the rate and the cap, naming them.
        sizing(targetFpp, maxShardBytes);
        if (maxMemoryBytes <= 0) {
            throw new IllegalArgumentException(
                    "filter.max-memory-bytes must be > 0, not " + maxMemoryBytes);
        }
        if (rebuildThreads < 1 || rebuildThreads > 8) {
            throw new IllegalArgumentException(
                    "filter.rebuild-threads must be in 1..8, not " + rebuildThreads);
        }
        if (rebuildBytesPerSecond < 0) {
            throw new IllegalArgumentException(
                    "filter.rebuild-bytes-per-second must be >= 0 (0: unlimited), not "
                            + rebuildBytesPerSecond);
        }
        if (maxConcurrentFetches < 1) {
            throw new IllegalArgumentException(
                    "filter.max-concurrent-fetches must be > 0, not " + maxConcurrentFetches);
        }
    }

    public FilterSizing sizing() {
        return sizing(targetFpp, maxShardBytes);
    }

    /**
     * The capacity floor of a shard's filter on the server: 64 keys, 192 bytes in memory. Low, so a
     * table with 32,768 key groups and little data costs little (6 MiB of filters, not the 44 MiB
     * the client's 1,024-key floor would); a shard that grows rebuilds its filter as it does, at
     * about 1.4 scanned keys per new key ({@link FilterSizing}).
     */
    static final long MIN_KEYS = 64;

    private static FilterSizing sizing(double targetFpp, long maxShardBytes) {
        try {
            return new FilterSizing(targetFpp, MIN_KEYS, maxShardBytes);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "bad filter.target-fpp or filter.max-shard-bytes: " + e.getMessage(), e);
        }
    }

    public FilterOptions withMaxMemoryBytes(long bytes) {
        return new FilterOptions(
                targetFpp,
                maxShardBytes,
                bytes,
                rebuildThreads,
                rebuildBytesPerSecond,
                maxConcurrentFetches);
    }
}
