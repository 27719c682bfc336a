package io.taishan.bloom;

/**
 * The shape of a {@link BloomFilter}: how many 64-byte blocks it has and how many bits each key
 * sets in its block. Two filters can be merged only if their geometries are equal.
 *
 * <p>The model methods ({@link #expectedFpp}, {@link #expectedBitsSet}, {@link #estimateKeys})
 * assume keys whose hashes behave as uniform random 64-bit values, which {@link KeyHash} provides;
 * see {@code BlockedBloomMath} for the formula.
 *
 * @param numBlocks number of 512-bit (one cache line) blocks, 1 to {@link #MAX_BLOCKS}
 * @param numHashes bits set per key, 1 to {@link #MAX_HASHES}
 */
public record FilterGeometry(int numBlocks, int numHashes) {

    /** Bits per block: one 64-byte cache line, so a put or a lookup touches one line. */
    public static final int BLOCK_BITS = BlockedBloomMath.BLOCK_BITS;

    public static final int BLOCK_BYTES = BLOCK_BITS / 8;

    /**
     * The largest filter, 2 GiB minus one block: what one direct {@code ByteBuffer} can address
     * with room for cache-line alignment.
     */
    public static final int MAX_BLOCKS = (1 << 25) - 1;

    public static final int MAX_HASHES = 16;

    public FilterGeometry {
        if (numBlocks < 1 || numBlocks > MAX_BLOCKS) {
            throw new IllegalArgumentException(
                    "numBlocks must be in [1, " + MAX_BLOCKS + "], got " + numBlocks);
        }
        if (numHashes < 1 || numHashes > MAX_HASHES) {
            throw new IllegalArgumentException(
                    "numHashes must be in [1, " + MAX_HASHES + "], got " + numHashes);
        }
    }

    /** Total bits of the filter. */
    public long bitCount() {
        return (long) numBlocks * BLOCK_BITS;
    }

    /** Bytes of the bit array (the off-heap allocation adds at most one block for alignment). */
    public long bitsBytes() {
        return (long) numBlocks * BLOCK_BYTES;
    }

    /** The model's false-positive probability once {@code keys} distinct keys are in. */
    public double expectedFpp(double keys) {
        return BlockedBloomMath.fpp(keys / numBlocks, numHashes);
    }

    /** The model's expected number of set bits once {@code keys} distinct keys are in. */
    public double expectedBitsSet(double keys) {
        return BlockedBloomMath.fill(keys / numBlocks, numHashes) * bitCount();
    }

    /**
     * How many distinct keys a filter with {@code bitsSet} set bits most likely holds (the inverse
     * of {@link #expectedBitsSet}); infinite for a full filter. Keys inserted twice count once,
     * which is why the rebuild policy is driven by this and not by an insert counter.
     */
    public double estimateKeys(long bitsSet) {
        return BlockedBloomMath.keysPerBlockForFill((double) bitsSet / bitCount(), numHashes)
                * numBlocks;
    }

    /**
     * The largest number of distinct keys for which {@link #expectedFpp} stays at or below {@code
     * fpp}.
     */
    public long capacityAt(double fpp) {
        long lo = 0;
        long hi = bitCount();
        while (lo < hi) {
            long mid = (lo + hi + 1) >>> 1;
            if (expectedFpp(mid) <= fpp) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }
}
