package io.taishan.bloom;

/**
 * The false-positive model of a cache-line-blocked Bloom filter, used for sizing, for estimating
 * the keys a filter holds from its set bits, and for the rebuild threshold.
 *
 * <p>A key picks one 512-bit block and sets {@code k} bit positions in it, drawn independently (so
 * two of them can coincide). With {@code n} keys spread over {@code B} blocks, the number of keys
 * in the block a query lands in is Poisson-distributed with mean {@code λ = n / B}; given {@code i}
 * keys there, a bit is set with probability {@code q = 1 - (1 - 1/512)^(k·i)}, and a query whose
 * {@code k} draws hit {@code d} distinct bits is a false positive with probability {@code q^d}. So
 *
 * <pre>{@code fpp(λ, k) = Σ_i Poisson(i; λ) · Σ_d P(D = d) · q_i^d}</pre>
 *
 * where {@code D} is the number of distinct values among {@code k} uniform draws from 512. The
 * Poisson term is what makes a blocked filter need more bits than a classic one for the same rate
 * (blocks with more than their share of keys dominate); leaving it out would under-size the filter.
 * {@code FilterSizingTest} checks the model against measured rates.
 */
final class BlockedBloomMath {

    static final int BLOCK_BITS = 512;

    private static final double BIT_MISS = 1.0 - 1.0 / BLOCK_BITS;

    /** Where a key count ends for the model: beyond it every bit of every block is set. */
    private static final double MAX_KEYS_PER_BLOCK = 100_000;

    /** {@code DISTINCT[k][d]} = P(k draws from 512 hit exactly d distinct bits). */
    private static final double[][] DISTINCT = new double[FilterGeometry.MAX_HASHES + 1][];

    private static final int LN_FACTORIAL_TABLE = 256;
    private static final double[] LN_FACTORIAL = new double[LN_FACTORIAL_TABLE];

    static {
        for (int k = 1; k <= FilterGeometry.MAX_HASHES; k++) {
            double[] dist = {1.0};
            for (int draw = 0; draw < k; draw++) {
                double[] next = new double[dist.length + 1];
                for (int d = 0; d < dist.length; d++) {
                    next[d] += dist[d] * d / BLOCK_BITS;
                    next[d + 1] += dist[d] * (BLOCK_BITS - d) / BLOCK_BITS;
                }
                dist = next;
            }
            DISTINCT[k] = dist;
        }
        for (int i = 1; i < LN_FACTORIAL_TABLE; i++) {
            LN_FACTORIAL[i] = LN_FACTORIAL[i - 1] + Math.log(i);
        }
    }

    private BlockedBloomMath() {}

    /** The expected false-positive probability with {@code keysPerBlock} keys per block. */
    static double fpp(double keysPerBlock, int k) {
        if (!(keysPerBlock > 0)) {
            return 0.0;
        }
        double lambda = Math.min(keysPerBlock, MAX_KEYS_PER_BLOCK);
        double[] distinct = DISTINCT[k];
        double spread = 12 * Math.sqrt(lambda) + 30;
        int from = (int) Math.max(0, Math.floor(lambda - spread));
        int to = (int) Math.ceil(lambda + spread);
        double lnLambda = Math.log(lambda);
        double sum = 0;
        for (int i = from; i <= to; i++) {
            double pmf = Math.exp(-lambda + i * lnLambda - lnFactorial(i));
            if (pmf == 0) {
                continue;
            }
            double q = 1.0 - Math.pow(BIT_MISS, (double) k * i);
            double given = 0;
            double qd = 1;
            for (int d = 1; d < distinct.length; d++) {
                qd *= q;
                given += distinct[d] * qd;
            }
            sum += pmf * given;
        }
        return Math.min(1.0, sum);
    }

    /**
     * The expected fraction of bits set with {@code keysPerBlock} keys per block: for Poisson
     * {@code i}, {@code E[(1 - 1/512)^(k·i)] = exp(-λ·(1 - (1 - 1/512)^k))}.
     */
    static double fill(double keysPerBlock, int k) {
        return -Math.expm1(-keysPerBlock * perKeyFillRate(k));
    }

    /** The inverse of {@link #fill}: keys per block that leave {@code fill} of the bits set. */
    static double keysPerBlockForFill(double fill, int k) {
        if (fill <= 0) {
            return 0;
        }
        if (fill >= 1) {
            return Double.POSITIVE_INFINITY;
        }
        return -Math.log1p(-fill) / perKeyFillRate(k);
    }

    /** The {@code k} that minimises {@link #fpp} at this load. */
    static int bestHashes(double keysPerBlock) {
        int best = 1;
        double bestFpp = Double.MAX_VALUE;
        for (int k = 1; k <= FilterGeometry.MAX_HASHES; k++) {
            double p = fpp(keysPerBlock, k);
            if (p < bestFpp) {
                bestFpp = p;
                best = k;
            }
        }
        return best;
    }

    private static double perKeyFillRate(int k) {
        return 1.0 - Math.pow(BIT_MISS, k);
    }

    private static double lnFactorial(int n) {
        if (n < LN_FACTORIAL_TABLE) {
            return LN_FACTORIAL[n];
        }
        // Stirling's series; at n >= 256 the next term is below 1e-16 relative.
        double x = n;
        return x * Math.log(x)
                - x
                + 0.5 * Math.log(2 * Math.PI * x)
                + 1.0 / (12 * x)
                - 1.0 / (360 * x * x * x);
    }
}
