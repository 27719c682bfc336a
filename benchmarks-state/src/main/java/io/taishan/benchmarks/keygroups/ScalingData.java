package io.taishan.benchmarks.keygroups;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/**
 * The data every backend and every key-group count loads, the same each time: keys {@code 0 ..
 * keys-1}, each with a value of {@code valueBytes} bytes and a map of {@code mapEntries} entries.
 * The change set moves {@code changed} keys, spread evenly over the key space, to version 1: a new
 * value and a new first map entry. Change rounds after the first take the next key of each stride
 * (round {@code r} changes keys {@code i * stride + r}), so each round changes as many keys, none
 * changed before. Values are derived from key and version, so a restored backend is checked against
 * this class, not against anything it stored.
 */
public final class ScalingData {
    static final ValueStateDescriptor<byte[]> VALUE =
            new ValueStateDescriptor<>("value", BytePrimitiveArraySerializer.INSTANCE);
    static final MapStateDescriptor<Long, Long> MAP =
            new MapStateDescriptor<>("map", LongSerializer.INSTANCE, LongSerializer.INSTANCE);

    public final int keys;
    public final int valueBytes;
    public final int mapEntries;
    public final int changed;
    public final int verify;
    private final int stride;

    public ScalingData(int keys, int valueBytes, int mapEntries, int changed, int verify) {
        if (keys < 1 || changed < 0 || changed > keys || mapEntries < 1 || verify < 1) {
            throw new IllegalArgumentException(
                    "need keys >= 1, 0 <= changed <= keys, map entries >= 1, verify >= 1");
        }
        this.keys = keys;
        this.valueBytes = valueBytes;
        this.mapEntries = mapEntries;
        this.changed = changed;
        this.verify = Math.min(verify, keys);
        this.stride = changed == 0 ? Integer.MAX_VALUE : keys / changed;
    }

    /**
     * Whether one of the first {@code rounds} change rounds updates {@code key}: in each, every
     * {@code stride}-th key, {@code changed} of them.
     */
    boolean isChanged(long key, int rounds) {
        return key % stride < rounds && key / stride < changed;
    }

    /** The keys that change round {@code round} (from 0) updates. */
    long[] changedKeys(int round) {
        if (round < 0 || (changed > 0 && round >= stride)) {
            throw new IllegalArgumentException(
                    "change round " + round + ": only " + stride + " rounds of distinct keys");
        }
        long[] result = new long[changed];
        for (int i = 0; i < changed; i++) {
            result[i] = (long) i * stride + round;
        }
        return result;
    }

    /** The version of {@code key} before (0) or after the change set. */
    int version(long key, boolean afterChange) {
        return version(key, afterChange ? 1 : 0);
    }

    /** The version of {@code key} after {@code rounds} change rounds. */
    int version(long key, int rounds) {
        return isChanged(key, rounds) ? 1 : 0;
    }

    byte[] value(long key, int version) {
        byte[] value = new byte[valueBytes];
        new SplittableRandom(key * 1_000_003L + version).nextBytes(value);
        return value;
    }

    /** Entry {@code entry} of the key's map; only the first one changes with the version. */
    long mapValue(long key, int entry, int version) {
        return key * 1_000 + entry + (entry == 0 ? version * 1_000_000_000L : 0);
    }

    /** The keys whose key group lies in {@code range}, ascending. */
    long[] keysIn(KeyGroupRange range, int maxParallelism) {
        return Arrays.stream(allKeys())
                .filter(
                        key ->
                                range.contains(
                                        KeyGroupRangeAssignment.assignToKeyGroup(
                                                key, maxParallelism)))
                .toArray();
    }

    /**
     * The keys a restore is checked on: {@code verify} keys spread over the key space, every other
     * one moved by one so that both changed and unchanged keys are among them.
     */
    public long[] sample() {
        List<Long> sample = new ArrayList<>();
        for (int i = 0; i < verify; i++) {
            long key = (long) i * keys / verify + (i % 2);
            if (key < keys && (sample.isEmpty() || sample.get(sample.size() - 1) != key)) {
                sample.add(key);
            }
        }
        return sample.stream().mapToLong(Long::longValue).toArray();
    }

    private long[] allKeys() {
        long[] all = new long[keys];
        Arrays.setAll(all, i -> i);
        return all;
    }

    /** For the report: what was loaded and changed. */
    public String describe() {
        return String.format(
                "%,d keys, each a ValueState<byte[]> of %d bytes and a MapState<Long, Long> of %d"
                        + " entries; change set: %,d keys (value and one map entry)",
                keys, valueBytes, mapEntries, changed);
    }
}
