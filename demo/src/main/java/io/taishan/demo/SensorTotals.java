package io.taishan.demo;

import java.util.Arrays;

/** A sensor's final state, reported once when the input has ended. A Flink POJO. */
public final class SensorTotals {
    public long sensor;
    public long count;
    public long sum;

    /** Readings per value bucket ({@link SensorInput#bucket}). */
    public long[] histogram;

    /** Values still in the list state when the report was made; the final drain empties it. */
    public long undrained;

    public SensorTotals() {}

    boolean sameAs(SensorTotals other) {
        return sensor == other.sensor
                && count == other.count
                && sum == other.sum
                && Arrays.equals(histogram, other.histogram)
                && undrained == other.undrained;
    }

    @Override
    public String toString() {
        return "sensor "
                + sensor
                + ": count "
                + count
                + ", sum "
                + sum
                + ", histogram "
                + Arrays.toString(histogram)
                + (undrained == 0 ? "" : ", undrained " + undrained);
    }
}
