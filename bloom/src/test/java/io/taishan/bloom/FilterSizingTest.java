package io.taishan.bloom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FilterSizingTest {

    /**
     * The point of the sizing: filled to its capacity with real keys, a filter's measured rate on
     * keys never inserted meets the target. Includes 0.1%, whose 9 bits per key need the second
     * slice mix, and a floor-sized filter of 20 blocks.
     */
    @ParameterizedTest(name = "target {0}, {1} keys")
    @CsvSource({"0.01, 1024", "0.01, 200000", "0.001, 100000", "0.05, 20000"})
    void measuredFalsePositiveRateAtCapacityMeetsTheTarget(double target, long keys) {
        FilterSizing sizing = new FilterSizing(target, 1, 64L << 20);
        FilterGeometry geometry = sizing.geometryFor(keys);
        long capacity = sizing.capacity(geometry);
        assertThat(capacity).isGreaterThanOrEqualTo(keys);
        int probes = (int) Math.min(2_000_000, Math.max(400_000, 400 / target));
        try (BloomFilter filter = BloomFilter.create(geometry)) {
            for (long id = 0; id < capacity; id++) {
                filter.put(Keys.hash(id));
            }
            double measured = Keys.falsePositiveRate(filter, 1L << 40, probes);
            double model = geometry.expectedFpp(capacity);
            System.out.printf(
                    "target %s: %s, capacity %d, %.2f bits/key, measured %.5f, model %.5f%n",
                    target,
                    geometry,
                    capacity,
                    (double) geometry.bitCount() / capacity,
                    measured,
                    model);
            assertThat(measured).isLessThanOrEqualTo(target);
            // The model must not be far off either way: it sizes every filter and drives the
            // rebuild rule (5 sigma of the measurement, plus 10% for the Poisson approximation).
            double sigma = Math.sqrt(model * (1 - model) / probes);
            assertThat(measured).isCloseTo(model, within(5 * sigma + 0.1 * model));
            assertThat(filter.estimatedKeys()).isCloseTo(capacity, within(0.03 * capacity));
            assertThat(filter.estimatedFpp()).isCloseTo(model, within(0.1 * model));
        }
    }

    @Test
    void geometryIsTheSmallestThatMeetsTheTarget() {
        FilterSizing sizing = FilterSizing.DEFAULT;
        for (long keys : new long[] {1024, 5000, 123_456, 3_000_000}) {
            FilterGeometry geometry = sizing.geometryFor(keys);
            assertThat(geometry.expectedFpp(keys)).isLessThanOrEqualTo(sizing.targetFpp());
            double oneBlockLess = (double) keys / (geometry.numBlocks() - 1);
            double best =
                    BlockedBloomMath.fpp(oneBlockLess, BlockedBloomMath.bestHashes(oneBlockLess));
            assertThat(best)
                    .as("%d keys in one block less", keys)
                    .isGreaterThan(sizing.targetFpp());
            // 1% costs 10 bits per key in 512-bit blocks (9.6 in a classic filter).
            assertThat((double) geometry.bitCount() / keys).isBetween(9.9, 10.2);
            assertThat(geometry.numHashes()).isEqualTo(6);
        }
    }

    @Test
    void floorAndCap() {
        FilterSizing sizing = new FilterSizing(0.01, 1024, 100 * 64);
        assertThat(sizing.geometryFor(0)).isEqualTo(sizing.geometryFor(1024));
        assertThat(sizing.geometryForLiveKeys(0)).isEqualTo(sizing.geometryFor(1024));
        assertThat(sizing.geometryForLiveKeys(3000)).isEqualTo(sizing.geometryFor(6000));
        FilterGeometry capped = sizing.geometryFor(1_000_000);
        assertThat(capped.numBlocks()).isEqualTo(100);
        // Over capacity the best k is fewer bits per key: the filter degrades, it does not fail.
        assertThat(capped.numHashes()).isLessThan(6);
        assertThat(sizing.geometryForLiveKeys(Long.MAX_VALUE).numBlocks()).isEqualTo(100);
    }

    @Test
    void keyEstimateInvertsTheExpectedFill() {
        FilterGeometry geometry = new FilterGeometry(1000, 6);
        for (double keys : new double[] {0, 1, 1000, 51_200, 200_000}) {
            long bits = Math.round(geometry.expectedBitsSet(keys));
            assertThat(geometry.estimateKeys(bits)).isCloseTo(keys, within(0.01 * keys + 1));
        }
        assertThat(geometry.estimateKeys(geometry.bitCount())).isInfinite();
    }

    @Test
    void rebuildThresholdIsHalfTheTargetAfterAFreshBuild() {
        FilterSizing sizing = FilterSizing.DEFAULT;
        long live = 50_000;
        FilterGeometry geometry = sizing.geometryForLiveKeys(live);
        long capacity = sizing.capacity(geometry);
        long threshold = sizing.rebuildThresholdBits(geometry, live);
        double keysAtThreshold = geometry.estimateKeys(threshold);
        assertThat(geometry.expectedFpp(keysAtThreshold))
                .isCloseTo(sizing.targetFpp() / 2, within(0.0005));
        assertThat(keysAtThreshold / capacity).isBetween(0.8, 0.9);
    }

    @Test
    void rebuildThresholdOfACappedFilterWaitsForAQuarterOfItsCapacity() {
        FilterSizing sizing = new FilterSizing(0.01, 1024, 64 * 64);
        FilterGeometry geometry = sizing.geometryForLiveKeys(100_000);
        long capacity = sizing.capacity(geometry);
        // Far past capacity, so rule (a) already holds; the guard counts a quarter of the
        // capacity (or of the floor, if the capped filter holds even less at the target).
        double keysAtBuild = 100_000;
        long threshold = sizing.rebuildThresholdBits(geometry, keysAtBuild);
        assertThat(threshold)
                .isEqualTo(
                        (long)
                                Math.min(
                                        geometry.bitCount(),
                                        Math.ceil(
                                                geometry.expectedBitsSet(
                                                        keysAtBuild
                                                                + Math.max(
                                                                                capacity,
                                                                                sizing.minKeys())
                                                                        / 4.0))));
        assertThat((double) threshold).isGreaterThan(geometry.expectedBitsSet(keysAtBuild));
    }

    @Test
    void invalidParametersAreRejected() {
        assertThatThrownBy(() -> new FilterSizing(0, 1, 64)).hasMessageContaining("targetFpp");
        assertThatThrownBy(() -> new FilterSizing(0.6, 1, 64)).hasMessageContaining("targetFpp");
        assertThatThrownBy(() -> new FilterSizing(0.01, 0, 64)).hasMessageContaining("minKeys");
        assertThatThrownBy(() -> new FilterSizing(0.01, 1, 63)).hasMessageContaining("maxBytes");
        assertThatThrownBy(() -> new FilterGeometry(0, 6)).hasMessageContaining("numBlocks");
        assertThatThrownBy(() -> new FilterGeometry(1, 17)).hasMessageContaining("numHashes");
    }
}
