package io.taishan.backend.write;

import io.taishan.backend.read.CachePolicy;
import io.taishan.backend.read.ReadPathUpdates;
import io.taishan.kv.client.ShardLease;

/**
 * The write path of one subtask, in one place: every state mutation goes to the {@link
 * WriteBatchQueue} (ordered, batched, the only place unflushed data lives) and, from here, to each
 * layer of the read path it changes ({@link ReadPathUpdates}: the cache written through, the
 * shard's Bloom filter told of the key). Task thread only.
 */
public final class StateWriter {
    private final WriteBatchQueue queue;
    private final ReadPathUpdates readPath;

    public StateWriter(WriteBatchQueue queue, ReadPathUpdates readPath) {
        this.queue = queue;
        this.readPath = readPath;
    }

    public WriteBatchQueue queue() {
        return queue;
    }

    /**
     * @param mapPrefixLength for map entries, the length of the map's prefix in {@code key}
     */
    public void put(
            ShardLease lease, byte[] key, byte[] value, CachePolicy policy, int mapPrefixLength) {
        readPath.inserted(lease.shard(), key, policy, mapPrefixLength);
        queue.put(lease, key, value);
        readPath.put(lease.shard(), key, value, policy, mapPrefixLength);
    }

    public void delete(ShardLease lease, byte[] key, CachePolicy policy, int mapPrefixLength) {
        queue.delete(lease, key);
        readPath.delete(lease.shard(), key, policy, mapPrefixLength);
    }

    /** Server-side append with the list delimiter; never reads. */
    public void append(
            ShardLease lease, byte[] key, byte[] operand, CachePolicy policy, int mapPrefixLength) {
        // Asked before the key goes in: "surely absent" then means the list is just the operand.
        boolean wasAbsent = readPath.surelyAbsent(lease.shard(), key, policy);
        readPath.inserted(lease.shard(), key, policy, mapPrefixLength);
        queue.append(lease, key, operand);
        readPath.append(lease.shard(), key, operand, policy, mapPrefixLength, wasAbsent);
    }

    /** {@code clear()} of a map: deletes every entry under {@code prefix}. */
    public void clearMap(ShardLease lease, byte[] prefix, byte[] prefixEnd) {
        queue.deleteRange(lease, prefix, prefixEnd);
        readPath.clearMap(lease.shard(), prefix);
    }

    /** Deletes {@code [begin, end)} of the lease's shard, whatever it holds. */
    public void deleteRange(ShardLease lease, byte[] begin, byte[] end) {
        queue.deleteRange(lease, begin, end);
        readPath.clearShard(lease.shard());
    }

    // ---- timers: their keys are only ever scanned, never read one by one

    public void putUnread(ShardLease lease, byte[] key, byte[] value) {
        queue.putScanOnly(lease, key, value);
    }

    public void deleteUnread(ShardLease lease, byte[] key) {
        queue.delete(lease, key);
    }
}
