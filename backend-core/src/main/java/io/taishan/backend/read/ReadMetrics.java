package io.taishan.backend.read;

import io.taishan.cache.CacheStats;
import io.taishan.cache.StateCache;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.ToLongFunction;
import javax.annotation.Nullable;
import org.apache.flink.metrics.MetricGroup;

/**
 * What the read path of one subtask did, under the operator's {@code taishan.read} metric group:
 * {@code cacheHits}, {@code cacheMisses}, {@code filterAbsent} (reads the Bloom filter answered
 * with no round trip), {@code filterFalsePositives} (a "maybe" the server answered with absent),
 * {@code remoteGets}, {@code remoteScans} (pages), {@code batchedFetches} and {@code batchedGets}
 * (the {@code MultiGet} rounds of batches of asynchronous state requests, and the keys they read),
 * {@code mapListingHits} (maps iterated from the cache's listing of their whole content, with no
 * scan), {@code mapPrefixAbsent} (maps iterated with no scan because they surely never had an
 * entry), and gauges of the TaskManager-wide cache it shares ({@code cacheBytesUsed}, {@code
 * cacheCapacityBytes}, {@code cacheEntries}, {@code cacheEvictions}) and of its filters ({@code
 * filterLoadedShards}, {@code filterBytes}). The RPC counts of every kind are under {@code
 * taishan.rpc}.
 */
public final class ReadMetrics {
    private final LongAdder cacheHits = new LongAdder();
    private final LongAdder cacheMisses = new LongAdder();
    private final LongAdder filterAbsent = new LongAdder();
    private final LongAdder filterFalsePositives = new LongAdder();
    private final LongAdder remoteGets = new LongAdder();
    private final LongAdder remoteScans = new LongAdder();
    private final LongAdder batchedFetches = new LongAdder();
    private final LongAdder batchedGets = new LongAdder();
    private final LongAdder mapListingHits = new LongAdder();
    private final LongAdder mapPrefixAbsent = new LongAdder();

    public static ReadMetrics register(
            @Nullable MetricGroup taishanGroup, StateCache cache, ShardFilters filters) {
        ReadMetrics metrics = new ReadMetrics();
        if (taishanGroup != null) {
            MetricGroup g = taishanGroup.addGroup("read");
            g.gauge("cacheHits", metrics.cacheHits::sum);
            g.gauge("cacheMisses", metrics.cacheMisses::sum);
            g.gauge("filterAbsent", metrics.filterAbsent::sum);
            g.gauge("filterFalsePositives", metrics.filterFalsePositives::sum);
            g.gauge("remoteGets", metrics.remoteGets::sum);
            g.gauge("remoteScans", metrics.remoteScans::sum);
            g.gauge("batchedFetches", metrics.batchedFetches::sum);
            g.gauge("batchedGets", metrics.batchedGets::sum);
            g.gauge("mapListingHits", metrics.mapListingHits::sum);
            g.gauge("mapPrefixAbsent", metrics.mapPrefixAbsent::sum);
            g.gauge("cacheBytesUsed", () -> cache.stats().bytesUsed());
            g.gauge("cacheCapacityBytes", () -> cache.stats().capacity());
            g.gauge("cacheEntries", () -> cache.stats().entries());
            g.gauge("cacheEvictions", () -> cache.stats().evictions());
            // The memory tier alone, TaskManager-wide: cacheHits above counts either tier.
            g.gauge(
                    "memoryCacheHits",
                    () -> {
                        CacheStats s = cache.stats();
                        return s.hits() + s.absentHits();
                    });
            g.gauge("memoryCacheMisses", () -> cache.stats().misses());
            if (cache.localStats().isPresent()) {
                // The local disk tier, TaskManager-wide as the memory cache's figures are.
                g.gauge("localCacheHits", () -> localStat(cache, CacheStats::hits));
                g.gauge("localCacheAbsentHits", () -> localStat(cache, CacheStats::absentHits));
                g.gauge("localCacheMisses", () -> localStat(cache, CacheStats::misses));
                g.gauge("localCacheEvictions", () -> localStat(cache, CacheStats::evictions));
                g.gauge("localCacheBytesUsed", () -> localStat(cache, CacheStats::bytesUsed));
                g.gauge("localCacheCapacityBytes", () -> localStat(cache, CacheStats::capacity));
                g.gauge("localCacheEntries", () -> localStat(cache, CacheStats::entries));
            }
            g.gauge("filterLoadedShards", filters::loadedShards);
            g.gauge("filterBytes", filters::offHeapBytes);
        }
        return metrics;
    }

    private static long localStat(StateCache cache, ToLongFunction<CacheStats> stat) {
        return cache.localStats().map(stat::applyAsLong).orElse(0L);
    }

    void cacheHit() {
        cacheHits.increment();
    }

    void cacheMiss() {
        cacheMisses.increment();
    }

    void filterAbsent() {
        filterAbsent.increment();
    }

    void filterFalsePositive() {
        filterFalsePositives.increment();
    }

    void remoteGet() {
        remoteGets.increment();
    }

    void batchedFetch(int keys) {
        batchedFetches.increment();
        batchedGets.add(keys);
    }

    void remoteScan() {
        remoteScans.increment();
    }

    void mapListingHit() {
        mapListingHits.increment();
    }

    void mapPrefixAbsentAnswer() {
        mapPrefixAbsent.increment();
    }

    public long cacheHits() {
        return cacheHits.sum();
    }

    public long cacheMisses() {
        return cacheMisses.sum();
    }

    public long filterAbsentAnswers() {
        return filterAbsent.sum();
    }

    public long filterFalsePositives() {
        return filterFalsePositives.sum();
    }

    public long remoteGets() {
        return remoteGets.sum();
    }

    /** The {@code MultiGet} rounds of batches of asynchronous state requests. */
    public long batchedFetches() {
        return batchedFetches.sum();
    }

    /** The keys those rounds read. */
    public long batchedGets() {
        return batchedGets.sum();
    }

    public long remoteScans() {
        return remoteScans.sum();
    }

    public long mapListingHits() {
        return mapListingHits.sum();
    }

    public long mapPrefixAbsentAnswers() {
        return mapPrefixAbsent.sum();
    }
}
