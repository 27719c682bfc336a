package io.taishan.it.job;

import java.util.Objects;

/**
 * One input record. A Flink POJO (public fields, no-arg constructor) so it travels without Kryo.
 */
public class Event {
    public long key;
    public int seq;
    public long value;
    public long timestamp;

    public Event() {}

    public Event(long key, int seq, long value, long timestamp) {
        this.key = key;
        this.seq = seq;
        this.value = value;
        this.timestamp = timestamp;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof Event)) {
            return false;
        }
        Event that = (Event) o;
        return key == that.key
                && seq == that.seq
                && value == that.value
                && timestamp == that.timestamp;
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, seq, value, timestamp);
    }

    @Override
    public String toString() {
        return "Event{key=" + key + ", seq=" + seq + ", value=" + value + ", ts=" + timestamp + '}';
    }
}
