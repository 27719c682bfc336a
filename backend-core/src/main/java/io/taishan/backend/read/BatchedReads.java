package io.taishan.backend.read;

import io.taishan.kv.client.ShardLease;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.annotation.Nullable;

/**
 * The point reads of a batch of state requests, answered by one remote {@code MultiGet} per
 * kv-server node instead of a {@code Get} each: what lets Flink 2's asynchronous state API hide the
 * round trip of a cache miss. Both passes over a batch go through the one read chain, {@link
 * StateReader#get}:
 *
 * <ol>
 *   <li><b>Probe.</b> The batch's reads run with the server switched off ({@link
 *       StateReader#startProbe}): every read answers null, and one that would have asked the server
 *       (missed the cache and the pending writes, not ruled out by the Bloom filter) is noted here.
 *       Nothing is cached, nothing counted.
 *   <li><b>Fetch.</b> The noted keys are read together ({@link StateReader#fetch}); their values
 *       wait here.
 *   <li><b>Run.</b> The requests run for real (on Flink 2, those of the keys that missed once the
 *       fetch answered). A read that reaches the server's turn takes a fetched value instead of
 *       calling it, and caches it as any server answer. Each fetched value is taken at most once,
 *       and a write to its key drops it ({@link ReadPathUpdates}): a read after a write of the same
 *       key, or after its value was taken and then overwritten, goes through the cache and the
 *       pending writes as ever.
 * </ol>
 *
 * <p>A fetched value stays exact until it is taken: the server's value of a key changes only
 * through this subtask's writes, and the probe noted only keys with no pending write, so any newer
 * write is one of the held requests' own, which run after the values are held and so drop them.
 *
 * <p>Cost: a probe is a cache lookup, a pending-writes lookup and a filter probe per read, the same
 * as the read itself when it hits; the saving is a round trip per missed key. Task thread only.
 */
public final class BatchedReads {
    /** A read the probe noted: its shard's lease and its key. */
    public record PointRead(ShardLease lease, byte[] key) {}

    private static final byte[] ABSENT = new byte[0];

    private boolean probing;
    private final List<PointRead> noted = new ArrayList<>();
    private final Map<ByteBuffer, byte[]> fetched = new HashMap<>();

    boolean probing() {
        return probing;
    }

    void startProbe() {
        if (probing) {
            throw new IllegalStateException("a probe is running");
        }
        probing = true;
        noted.clear();
    }

    List<PointRead> finishProbe() {
        probing = false;
        List<PointRead> reads = new ArrayList<>(noted);
        noted.clear();
        return reads;
    }

    /** The reads noted since the probe started. */
    int noted() {
        return noted.size();
    }

    void note(ShardLease lease, byte[] key) {
        noted.add(new PointRead(lease, key));
    }

    /** Holds the fetched values ({@code null}: absent) of {@code reads} for the run. */
    void hold(List<PointRead> reads, List<byte[]> values) {
        for (int i = 0; i < reads.size(); i++) {
            byte[] value = values.get(i);
            fetched.put(ByteBuffer.wrap(reads.get(i).key()), value == null ? ABSENT : value);
        }
    }

    /** Whether a fetched value of {@code key} is held. */
    boolean holds(byte[] key) {
        return !fetched.isEmpty() && fetched.containsKey(ByteBuffer.wrap(key));
    }

    /** Takes the fetched value of {@code key}, which {@link #holds} it: null if absent. */
    @Nullable
    byte[] take(byte[] key) {
        byte[] value = fetched.remove(ByteBuffer.wrap(key));
        return value == ABSENT ? null : value;
    }

    /** A write of {@code key}: its fetched value is no longer the key's value. */
    void written(byte[] key) {
        if (!fetched.isEmpty()) {
            fetched.remove(ByteBuffer.wrap(key));
        }
    }

    /** A range delete (a map's clear, a shard's): no fetched value survives it. */
    void rangeWritten() {
        fetched.clear();
    }

    /** After the run: values never taken are dropped. */
    void release() {
        fetched.clear();
    }
}
