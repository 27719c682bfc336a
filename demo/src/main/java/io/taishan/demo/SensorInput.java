package io.taishan.demo;

import java.io.Serializable;

/**
 * The demo's whole input as a pure function of a record's index: {@code sensors} sensors with
 * {@code readingsPerSensor} readings each. Because it is a function, the final check can compute
 * what every key's state must end as, whatever the parallelism, the restores and the replays.
 */
final class SensorInput implements Serializable {
    private static final long serialVersionUID = 1L;

    static final int HISTOGRAM_BUCKETS = 10;
    static final int MAX_VALUE = 1000;

    private final int sensors;
    private final int readingsPerSensor;

    SensorInput(int sensors, int readingsPerSensor) {
        this.sensors = sensors;
        this.readingsPerSensor = readingsPerSensor;
    }

    int sensors() {
        return sensors;
    }

    int readingsPerSensor() {
        return readingsPerSensor;
    }

    long totalReadings() {
        return (long) sensors * readingsPerSensor;
    }

    Reading reading(long index) {
        long sensor = index % sensors;
        int seq = (int) (index / sensors);
        return new Reading(sensor, seq, value(sensor, seq));
    }

    /** What the job must report for the sensor once all its readings are in. */
    SensorTotals expectedTotals(long sensor) {
        SensorTotals totals = new SensorTotals();
        totals.sensor = sensor;
        totals.histogram = new long[HISTOGRAM_BUCKETS];
        for (int seq = 0; seq < readingsPerSensor; seq++) {
            int value = value(sensor, seq);
            totals.count++;
            totals.sum += value;
            totals.histogram[bucket(value)]++;
        }
        return totals;
    }

    static int bucket(int value) {
        return value * HISTOGRAM_BUCKETS / MAX_VALUE;
    }

    /** A deterministic, well-mixed value in [0, MAX_VALUE). */
    static int value(long sensor, int seq) {
        long h = sensor * 0x9E3779B97F4A7C15L + seq * 0xC2B2AE3D27D4EB4FL;
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 32;
        return (int) Math.floorMod(h, (long) MAX_VALUE);
    }
}
