package io.taishan.demo;

/** One reading of a sensor: a Flink POJO, so no Kryo is involved. */
public final class Reading {
    public long sensor;
    public int seq;
    public int value;

    public Reading() {}

    Reading(long sensor, int seq, int value) {
        this.sensor = sensor;
        this.seq = seq;
        this.value = value;
    }
}
