package io.taishan.bloom;

import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * How big a shard's filter is and when it is rebuilt.
 *
 * <p><b>Sizing.</b> A filter built for {@code L} live keys is sized for a capacity of {@code
 * max(minKeys, 2·L)} keys at {@link #targetFpp()}: the smallest number of blocks, with the best
 * number of bits per key, whose modelled false-positive rate at that capacity is at most the target
 * (see {@link FilterGeometry#expectedFpp}). At 1% that is 10.0 bits (1.25 bytes) per key of
 * capacity with 6 bits set per key, so 2.5 bytes per live key right after a build. The floor keeps
 * a fresh or tiny shard's filter at a few KiB instead of re-building it every few inserts while it
 * grows; the cap ({@link #maxBytes()}) bounds memory per shard: a shard with more keys than its
 * capped filter can hold gets a higher false-positive rate, never a false negative.
 *
 * <p><b>Rebuild rule.</b> {@link #rebuildThresholdBits} says when: once the filter's set bits reach
 * the count expected for (a) half the target rate, and (b) at least a quarter of the capacity in
 * new distinct keys since the build. Why these:
 *
 * <ul>
 *   <li>The trigger is the filter's fill, not an insert counter: an update of a key already in the
 *       filter (the common write in Flink) sets no bit and does not make the filter worse, so it
 *       must not cause a scan. Set bits count distinct keys, live or deleted.
 *   <li>Half the target, not the target: the rebuild is a background key scan, and inserts go on
 *       while it runs. Near capacity the rate grows roughly as the 4th to 5th power of the key
 *       count, so at 1% half the target is reached at 85% of the capacity: the last 15% of the
 *       capacity (30% of the live keys at the build) is the room a scan has before the target is
 *       passed.
 *   <li>The quarter of the capacity bounds the work: every rebuild scans the live keys, and with
 *       the 2× headroom a rebuild comes after about 0.7·L new distinct keys, so the scans cost
 *       about 1.4 scanned keys per distinct key written. When the cap makes a filter too small for
 *       its live keys, (a) would hold right after every build; (b) keeps that from turning into a
 *       scan storm.
 * </ul>
 *
 * <p>Rebuilding from the live keys, rather than keeping time generations, is what bounds the rate
 * under churn: a deleted (or, later, expired) key is gone from the next build, and nothing depends
 * on a clock or on a TTL that could change across a restore.
 *
 * @param targetFpp the false-positive rate at capacity, in [1e-9, 0.5]
 * @param minKeys the capacity floor, at least 1
 * @param maxBytes the bit array's size cap, at least one 64-byte block
 */
public record FilterSizing(double targetFpp, long minKeys, long maxBytes) {

    /** 1% at capacity, a 1024-key floor (1.3 KiB), a 64 MiB cap (about 50 million keys). */
    public static final FilterSizing DEFAULT = new FilterSizing(0.01, 1024, 64L << 20);

    /** Capacity per live key at a build. */
    public static final double HEADROOM = 2.0;

    /** Rule (a): rebuild once the modelled rate reaches this fraction of the target. */
    public static final double REBUILD_AT_FRACTION_OF_TARGET = 0.5;

    /** Rule (b): ...and at least this fraction of the capacity arrived as new distinct keys. */
    public static final double MIN_NEW_KEYS_FRACTION_OF_CAPACITY = 0.25;

    public FilterSizing {
        if (!(targetFpp >= 1e-9 && targetFpp <= 0.5)) {
            throw new IllegalArgumentException(
                    "targetFpp must be in [1e-9, 0.5], got " + targetFpp);
        }
        if (minKeys < 1) {
            throw new IllegalArgumentException("minKeys must be at least 1, got " + minKeys);
        }
        if (maxBytes < FilterGeometry.BLOCK_BYTES
                || maxBytes > (long) FilterGeometry.MAX_BLOCKS * FilterGeometry.BLOCK_BYTES) {
            throw new IllegalArgumentException(
                    "maxBytes must be in ["
                            + FilterGeometry.BLOCK_BYTES
                            + ", "
                            + (long) FilterGeometry.MAX_BLOCKS * FilterGeometry.BLOCK_BYTES
                            + "], got "
                            + maxBytes);
        }
    }

    /** The most blocks {@link #maxBytes()} allows. */
    public int maxBlocks() {
        return (int) (maxBytes / FilterGeometry.BLOCK_BYTES);
    }

    /**
     * The smallest geometry that holds {@code max(keys, minKeys)} distinct keys at the target rate,
     * or the capped one (with the best bits per key for that load) if the cap is too small. Costs a
     * few milliseconds of model evaluation: call it per build, not per key.
     */
    public FilterGeometry geometryFor(long keys) {
        if (keys <= minKeys) {
            // Every new or tiny shard asks for the floor: a node opening tens of thousands of them
            // must not evaluate the model for each.
            return FLOORS.computeIfAbsent(this, s -> s.compute(s.minKeys));
        }
        return compute(keys);
    }

    private FilterGeometry compute(long keys) {
        double n = Math.max(keys, minKeys);
        int hi = maxBlocks();
        if (!meetsTarget(n, hi)) {
            return new FilterGeometry(hi, BlockedBloomMath.bestHashes(n / hi));
        }
        int lo = 1;
        while (lo < hi) {
            int mid = (int) (((long) lo + hi) >>> 1);
            if (meetsTarget(n, mid)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return new FilterGeometry(lo, BlockedBloomMath.bestHashes(n / lo));
    }

    /** The geometry of a build from {@code liveKeys} live keys: {@link #HEADROOM} times them. */
    public FilterGeometry geometryForLiveKeys(long liveKeys) {
        double wanted = Math.max(0, liveKeys) * HEADROOM;
        return geometryFor(wanted >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) Math.ceil(wanted));
    }

    /** Distinct keys {@code geometry} holds at the target rate. */
    public long capacity(FilterGeometry geometry) {
        return geometry.capacityAt(targetFpp);
    }

    /**
     * The set-bit count at which a filter of {@code geometry}, built with an estimated {@code
     * keysAtBuild} distinct keys, needs a rebuild (the rule in the class comment). At most the
     * filter's bit count.
     */
    public long rebuildThresholdBits(FilterGeometry geometry, double keysAtBuild) {
        long[] capacities = capacities(geometry);
        double triggerKeys = capacities[0];
        double guardKeys =
                keysAtBuild + MIN_NEW_KEYS_FRACTION_OF_CAPACITY * Math.max(capacities[1], minKeys);
        double bits = geometry.expectedBitsSet(Math.max(triggerKeys, guardKeys));
        return (long) Math.min(geometry.bitCount(), Math.ceil(bits));
    }

    /** The floor geometry of each sizing in use: computed once, asked for by every new shard. */
    private static final ConcurrentHashMap<FilterSizing, FilterGeometry> FLOORS =
            new ConcurrentHashMap<>();

    /**
     * {@code capacityAt} at the rebuild trigger and at the target, per (sizing, geometry): a binary
     * search over the model each, asked for whenever a filter is made or loaded. A node has few
     * distinct geometries (they come from sizes), so the memo stays small; it is cleared if it ever
     * is not.
     */
    private static final ConcurrentHashMap<List<Object>, long[]> CAPACITIES =
            new ConcurrentHashMap<>();

    private static final int MAX_MEMOIZED = 4096;

    private long[] capacities(FilterGeometry geometry) {
        List<Object> key = List.of(this, geometry);
        long[] known = CAPACITIES.get(key);
        if (known != null) {
            return known;
        }
        long[] computed = {
            geometry.capacityAt(targetFpp * REBUILD_AT_FRACTION_OF_TARGET), capacity(geometry)
        };
        if (CAPACITIES.size() >= MAX_MEMOIZED) {
            CAPACITIES.clear();
        }
        CAPACITIES.put(key, computed);
        return computed;
    }

    private boolean meetsTarget(double keys, int blocks) {
        double perBlock = keys / blocks;
        return BlockedBloomMath.fpp(perBlock, BlockedBloomMath.bestHashes(perBlock)) <= targetFpp;
    }
}
