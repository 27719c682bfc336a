package io.taishan.benchmarks.job;

import java.io.Serializable;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.DiscreteSampler;
import org.apache.commons.rng.sampling.distribution.RejectionInversionZipfSampler;
import org.apache.commons.rng.simple.RandomSource;

/**
 * One stretch of a generated input: {@code records} keys drawn from {@code [0, keys)}, as fast as
 * the job takes them or at {@code recordsPerSecond}, then a pause.
 *
 * @param pauseAfterMillis the source emits nothing for this long after the phase (the harness
 *     measures heap in that gap, so no forced GC falls into a timed phase)
 */
public record Phase(
        String name,
        long records,
        int keys,
        Access access,
        double recordsPerSecond,
        long pauseAfterMillis)
        implements Serializable {

    static final double ZIPF_EXPONENT = 0.99;

    /** How the keys of a phase are drawn. */
    public enum Access {
        /** Every key once, in a scattered order (a load: each record is a new key). */
        PERMUTATION,
        /** Uniform, with replacement. */
        UNIFORM,
        /** Zipf, s = 0.99; ranks scattered over the key space so hot keys span key groups. */
        ZIPF
    }

    /** A bijection of {@code [0, keys)} that spreads neighbours apart (a prime stride). */
    static long scatter(long index, int keys) {
        return Math.floorMod(index * 1_000_000_007L, (long) keys);
    }

    /** The phase's keys, one by one; seeded, so every backend sees the same input. */
    KeySequence sequence(long seed) {
        UniformRandomProvider random = RandomSource.XO_RO_SHI_RO_128_PP.create(seed);
        return switch (access) {
            case PERMUTATION -> i -> scatter(i, keys);
            case UNIFORM -> i -> random.nextInt(keys);
            case ZIPF -> {
                DiscreteSampler zipf =
                        RejectionInversionZipfSampler.of(random, keys, ZIPF_EXPONENT);
                yield i -> scatter(zipf.sample() - 1, keys);
            }
        };
    }

    /** The key of the phase's record {@code i}. */
    interface KeySequence {
        long key(long i);
    }
}
