package io.taishan.kv.client;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.taishan.kv.proto.Append;
import io.taishan.kv.proto.Delete;
import io.taishan.kv.proto.DeleteRange;
import io.taishan.kv.proto.Put;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.SnapshotMarker;
import io.taishan.kv.proto.WriteOp;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.annotation.Nullable;

/**
 * Ordered mutations over many shards of one table, sent by {@link KvStore#write}. The server
 * applies each shard's ops in the order they were added, atomically per shard; a snapshot marker
 * cuts the shard's snapshot exactly at its place in that order.
 *
 * <p>Not thread-safe; the bytes passed in are copied, except by the {@code *Shared} methods, which
 * keep the caller's value array (for values too large to copy for nothing: the caller promises not
 * to change it until the write completed).
 */
public final class WriteBatch {
    /** Per-op framing overhead assumed when estimating the request size. */
    private static final int OP_OVERHEAD_BYTES = 12;

    /** The scan-only flag on the wire: its tag and a one-byte bool. */
    private static final int SCAN_ONLY_FLAG_BYTES = 2;

    private final String table;
    private final Map<Integer, ShardWrite.Builder> shards = new LinkedHashMap<>();

    /**
     * The first lease of each shard: the node it is bound to (a batch holds one epoch per shard).
     */
    private final Map<Integer, ShardLease> leases = new LinkedHashMap<>();

    private int opCount;
    private long estimatedBytes;

    /**
     * The largest key (a range delete's bounds included) and value added: a sender whose limits
     * both meet needs no look at the ops one by one, neither to check them nor to find values too
     * large to go inline.
     */
    private int largestKey;

    private int largestValue;

    public WriteBatch(String table) {
        this.table = table;
    }

    public String table() {
        return table;
    }

    public WriteBatch put(ShardLease lease, byte[] key, byte[] value) {
        return addPut(lease, key, ByteString.copyFrom(value), false);
    }

    /**
     * {@link #put}, keeping {@code value} itself rather than a copy; it must not change until the
     * write completed. For large values, which the client uploads in chunks from this very array.
     */
    public WriteBatch putShared(ShardLease lease, byte[] key, byte[] value) {
        return addPut(lease, key, UnsafeByteOperations.unsafeWrap(value), false);
    }

    /** {@link #append}, keeping {@code value} itself as {@link #putShared} does. */
    public WriteBatch appendShared(ShardLease lease, byte[] key, byte[] value) {
        return addAppend(lease, key, UnsafeByteOperations.unsafeWrap(value));
    }

    /**
     * A put of a key that is only ever scanned, never read by {@link KvStore#get} or {@link
     * KvStore#multiGet} (Flink's timers: many short-lived keys with empty values): stored, read and
     * scanned like {@link #put}, but the server leaves it out of the shard's Bloom filter, which it
     * would only fill (and make rebuild sooner) without ever saving a lookup. A filter fetched
     * later may still answer "absent" for the key, so a caller must not consult a filter for it; a
     * rebuild (which scans every live key) puts the keys live at that time back in.
     */
    public WriteBatch putScanOnly(ShardLease lease, byte[] key, byte[] value) {
        return addPut(lease, key, ByteString.copyFrom(value), true);
    }

    public WriteBatch delete(ShardLease lease, byte[] key) {
        sized(key.length, 0);
        return add(
                lease,
                WriteOp.newBuilder()
                        .setDelete(Delete.newBuilder().setKey(ByteString.copyFrom(key)))
                        .build(),
                key.length);
    }

    /** Deletes every key in {@code [beginKey, endKey)}. */
    public WriteBatch deleteRange(ShardLease lease, byte[] beginKey, byte[] endKey) {
        sized(Math.max(beginKey.length, endKey.length), 0);
        return add(
                lease,
                WriteOp.newBuilder()
                        .setDeleteRange(
                                DeleteRange.newBuilder()
                                        .setBeginKey(ByteString.copyFrom(beginKey))
                                        .setEndKey(ByteString.copyFrom(endKey)))
                        .build(),
                beginKey.length + endKey.length);
    }

    /**
     * Server-side append: the value becomes {@code old + ',' + value}, or {@code value} when the
     * key is absent, without a read.
     */
    public WriteBatch append(ShardLease lease, byte[] key, byte[] value) {
        return addAppend(lease, key, ByteString.copyFrom(value));
    }

    private WriteBatch addPut(ShardLease lease, byte[] key, ByteString value, boolean scanOnly) {
        sized(key.length, value.size());
        Put.Builder put = Put.newBuilder().setKey(ByteString.copyFrom(key)).setValue(value);
        if (scanOnly) {
            put.setScanOnly(true);
        }
        return add(
                lease,
                WriteOp.newBuilder().setPut(put).build(),
                key.length + value.size() + (scanOnly ? SCAN_ONLY_FLAG_BYTES : 0));
    }

    private WriteBatch addAppend(ShardLease lease, byte[] key, ByteString value) {
        sized(key.length, value.size());
        return add(
                lease,
                WriteOp.newBuilder()
                        .setAppend(
                                Append.newBuilder()
                                        .setKey(ByteString.copyFrom(key))
                                        .setValue(value))
                        .build(),
                key.length + value.size());
    }

    /** A durable snapshot of the shard exactly at this point of its write stream. */
    public WriteBatch snapshotMarker(ShardLease lease, long snapshotId, boolean pinned) {
        return add(
                lease,
                WriteOp.newBuilder()
                        .setSnapshot(
                                SnapshotMarker.newBuilder()
                                        .setSnapshotId(snapshotId)
                                        .setPinned(pinned))
                        .build(),
                0);
    }

    public int opCount() {
        return opCount;
    }

    public boolean isEmpty() {
        return opCount == 0;
    }

    /** Roughly the serialized size of this batch, for size-based flushing and request limits. */
    public long estimatedBytes() {
        return estimatedBytes;
    }

    /** The largest key of any op, in bytes (a range delete counts its bounds). */
    int largestKeyBytes() {
        return largestKey;
    }

    /** The largest value of any put or append, in bytes. */
    int largestValueBytes() {
        return largestValue;
    }

    /** The shards touched, in first-touch order. */
    public List<Integer> shards() {
        return new ArrayList<>(shards.keySet());
    }

    List<ShardWrite> shardWrites() {
        List<ShardWrite> result = new ArrayList<>(shards.size());
        for (ShardWrite.Builder b : shards.values()) {
            result.add(b.build());
        }
        return result;
    }

    /** The lease the shard's ops were added under; null for a shard the batch does not touch. */
    @Nullable
    ShardLease leaseOf(int shard) {
        return leases.get(shard);
    }

    private void sized(int keyBytes, int valueBytes) {
        largestKey = Math.max(largestKey, keyBytes);
        largestValue = Math.max(largestValue, valueBytes);
    }

    private WriteBatch add(ShardLease lease, WriteOp op, int payloadBytes) {
        if (!lease.table().equals(table)) {
            throw new IllegalArgumentException(
                    "lease of table '"
                            + lease.table()
                            + "' used in a batch of table '"
                            + table
                            + "'");
        }
        ShardWrite.Builder shard = shards.get(lease.shard());
        if (shard == null) {
            shard = ShardWrite.newBuilder().setShard(lease.shard()).setEpoch(lease.epoch());
            shards.put(lease.shard(), shard);
            leases.put(lease.shard(), lease);
        } else if (shard.getEpoch() != lease.epoch()) {
            throw new IllegalArgumentException(
                    "two epochs for shard "
                            + lease.shard()
                            + " in one batch: "
                            + shard.getEpoch()
                            + " and "
                            + lease.epoch());
        }
        shard.addOps(op);
        opCount++;
        estimatedBytes += payloadBytes + OP_OVERHEAD_BYTES;
        return this;
    }
}
