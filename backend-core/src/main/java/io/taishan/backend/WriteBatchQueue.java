package io.taishan.backend;

import io.taishan.kv.client.KvLimits;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.client.WriteResult;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.apache.flink.metrics.MetricGroup;

/**
 * The ordered, batched write path of one subtask to its table.
 *
 * <p>Mutations go into an open segment (a {@link WriteBatch} plus an overlay of what they do to
 * each key), which is sealed and sent with {@link KvStore#writeAsync} when it reaches the byte or
 * op threshold, on the flush interval, or at a snapshot marker. One batch is in flight at a time,
 * because two concurrent writes have no order on the server; sealed segments wait behind it. Reads
 * consult the overlay of every unacknowledged segment first (read-your-writes), newest first.
 *
 * <p>Memory is bounded: when pending and in-flight segments together exceed {@code maxBytes}, the
 * writer waits for the in-flight batch to complete (back-pressure). A failed batch poisons the
 * queue: every later call, and every pending snapshot, fails with its cause.
 *
 * <p>Keys must be unique across shards (ours carry the key group), since the overlay is keyed by
 * key bytes alone. Mutating calls come from one thread (the task thread); reads may come from
 * others (queryable state); completions arrive on gRPC threads.
 */
final class WriteBatchQueue implements AutoCloseable, WriteQueueMetrics.WriteBatchQueueDepth {
    /** Per-op bookkeeping beyond the key and value bytes: tree node, entry, protobuf framing. */
    private static final int OP_OVERHEAD_BYTES = 96;

    private static final byte DELIMITER = ',';

    private final KvStore store;
    private final String table;
    private final WriteQueueConfig config;
    private final KvLimits limits;
    private final int maxOpsPerBatch;
    private final long maxBytesPerBatch;
    private final ScheduledFuture<?> intervalFlush;

    private final Object lock = new Object();

    @GuardedBy("lock")
    private Segment open;

    /** Sealed segments in send order; the first one is in flight. */
    @GuardedBy("lock")
    private final ArrayDeque<Segment> sealed = new ArrayDeque<>();

    @GuardedBy("lock")
    private long heldBytes;

    @GuardedBy("lock")
    @Nullable
    private Throwable failure;

    @GuardedBy("lock")
    private boolean closed;

    private final WriteQueueMetrics metrics;

    WriteBatchQueue(
            KvStore store,
            String table,
            WriteQueueConfig config,
            ScheduledExecutorService scheduler,
            @Nullable MetricGroup metricGroup) {
        this.store = store;
        this.table = table;
        this.config = config;
        this.metrics =
                metricGroup == null
                        ? WriteQueueMetrics.unregistered()
                        : WriteQueueMetrics.register(metricGroup, this);
        this.limits = store.limits();
        this.maxOpsPerBatch = Math.max(1, Math.min(config.flushCount(), limits.maxOpsPerRequest()));
        // Leave room for framing that the estimate does not see.
        this.maxBytesPerBatch =
                Math.max(1, Math.min(config.flushBytes(), limits.maxRequestBytes() * 3L / 4));
        this.open = new Segment(table);
        long intervalMillis = Math.max(1, config.flushInterval().toMillis());
        this.intervalFlush =
                scheduler.scheduleWithFixedDelay(
                        this::flushOnInterval,
                        intervalMillis,
                        intervalMillis,
                        TimeUnit.MILLISECONDS);
    }

    // ---- mutations

    void put(ShardLease lease, byte[] key, byte[] value) {
        synchronized (lock) {
            Segment segment = segmentFor(key, value);
            segment.batch.put(lease, key, value);
            segment.overlay.put(key, new Pending(Pending.PUT, value));
            added(segment, key.length + value.length);
        }
    }

    void delete(ShardLease lease, byte[] key) {
        synchronized (lock) {
            Segment segment = segmentFor(key, null);
            segment.batch.delete(lease, key);
            segment.overlay.put(key, Pending.DELETED);
            added(segment, key.length);
        }
    }

    /** Server-side append with the list delimiter; never reads. */
    void append(ShardLease lease, byte[] key, byte[] value) {
        synchronized (lock) {
            Segment segment = segmentFor(key, value);
            segment.batch.append(lease, key, value);
            Pending before = segment.overlay.get(key);
            Pending after;
            if (before == null) {
                after =
                        segment.coveredByDeletedRange(key)
                                ? new Pending(Pending.PUT, value)
                                : new Pending(Pending.APPEND, value);
            } else if (before.kind == Pending.DELETE) {
                after = new Pending(Pending.PUT, value);
            } else {
                after = new Pending(before.kind, join(before.value, value));
            }
            segment.overlay.put(key, after);
            added(segment, key.length + value.length);
        }
    }

    /** Deletes {@code [begin, end)} of the lease's shard. */
    void deleteRange(ShardLease lease, byte[] begin, byte[] end) {
        synchronized (lock) {
            Segment segment = segmentFor(begin, end);
            segment.batch.deleteRange(lease, begin, end);
            if (end.length == 0) {
                segment.overlay.tailMap(begin, true).clear();
            } else {
                segment.overlay.subMap(begin, true, end, false).clear();
            }
            segment.deletedRanges.add(new byte[][] {begin, end});
            added(segment, begin.length + end.length);
        }
    }

    /**
     * Puts a snapshot marker for {@code snapshotId} into the write stream of every shard and sends
     * it without waiting. The future completes with the snapshots once the server has taken them
     * all, or fails with the cause.
     */
    CompletableFuture<List<SnapshotInfo>> snapshotMarkers(
            Collection<ShardLease> leases, long snapshotId, boolean pinned) {
        synchronized (lock) {
            checkUsable();
            Segment segment = open;
            if (segment.opCount + leases.size() > maxOpsPerBatch) {
                seal();
                segment = open;
            }
            for (ShardLease lease : leases) {
                segment.batch.snapshotMarker(lease, snapshotId, pinned);
            }
            segment.opCount += leases.size();
            CompletableFuture<List<SnapshotInfo>> acknowledged = new CompletableFuture<>();
            segment.snapshotsTaken = acknowledged;
            seal();
            return acknowledged;
        }
    }

    // ---- reads

    /** The value with every pending and in-flight write applied, or null when absent. */
    @Nullable
    byte[] get(ShardLease lease, byte[] key) {
        List<byte[]> appended = null;
        synchronized (lock) {
            checkUsable();
            Iterator<Segment> newestFirst = newestFirst();
            while (newestFirst.hasNext()) {
                Segment segment = newestFirst.next();
                Pending pending = segment.overlay.get(key);
                if (pending != null) {
                    switch (pending.kind) {
                        case Pending.PUT:
                            return applyAppends(pending.value, appended);
                        case Pending.DELETE:
                            return applyAppends(null, appended);
                        default:
                            if (appended == null) {
                                appended = new ArrayList<>(2);
                            }
                            appended.add(pending.value);
                    }
                } else if (segment.coveredByDeletedRange(key)) {
                    return applyAppends(null, appended);
                }
            }
        }
        if (appended != null) {
            // The base of pending appends is remote, and a batch that holds some of them may
            // land while we read it: only after a full flush is the remote value exact.
            flushAndWait();
        }
        return Uninterruptibly.call(() -> store.get(lease, key));
    }

    /** Sends everything pending and waits until the server has applied it. */
    void flushAndWait() {
        synchronized (lock) {
            checkUsable();
            seal();
            boolean interrupted = false;
            try {
                while (!sealed.isEmpty() && failure == null && !closed) {
                    try {
                        lock.wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                        break;
                    }
                }
            } finally {
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
            if (interrupted) {
                throw new WriteQueueException(
                        "interrupted while waiting for the writes to table " + table, null);
            }
            checkUsable();
        }
    }

    /** Throws the cause of a failed flush, if any. */
    void checkHealthy() {
        synchronized (lock) {
            checkUsable();
        }
    }

    @Override
    public int pendingOps() {
        synchronized (lock) {
            int ops = open.opCount;
            for (Segment s : sealed) {
                ops += s.opCount;
            }
            return ops;
        }
    }

    @Override
    public long heldBytes() {
        synchronized (lock) {
            return heldBytes;
        }
    }

    @Override
    public void close() {
        intervalFlush.cancel(false);
        synchronized (lock) {
            closed = true;
            WriteQueueException cause =
                    new WriteQueueException("the write queue of table " + table + " closed", null);
            failPendingSnapshots(cause);
            lock.notifyAll();
        }
    }

    // ---- internals

    @GuardedBy("lock")
    private Segment segmentFor(byte[] key, @Nullable byte[] value) {
        checkUsable();
        // Rejected here, the write fails alone; sent, it would fail its whole batch.
        if (key.length > limits.maxKeyBytes()
                || (value != null && value.length > limits.maxValueBytes())) {
            throw new WriteQueueException(
                    "a state entry of table "
                            + table
                            + " is over the kv-server's limits: key "
                            + key.length
                            + " bytes (max "
                            + limits.maxKeyBytes()
                            + "), value "
                            + (value == null ? 0 : value.length)
                            + " bytes (max "
                            + limits.maxValueBytes()
                            + ")",
                    null);
        }
        int payloadBytes = key.length + (value == null ? 0 : value.length);
        if (open.opCount > 0
                && (open.opCount + 1 > maxOpsPerBatch
                        || open.bytes + payloadBytes + OP_OVERHEAD_BYTES > maxBytesPerBatch)) {
            seal();
        }
        return open;
    }

    @GuardedBy("lock")
    private void added(Segment segment, int payloadBytes) {
        // Key and value are held twice: in the overlay and in the protobuf batch.
        long bytes = 2L * payloadBytes + OP_OVERHEAD_BYTES;
        segment.opCount++;
        segment.bytes += bytes;
        heldBytes += bytes;
        if (segment.opCount >= maxOpsPerBatch || segment.bytes >= maxBytesPerBatch) {
            seal();
        }
        awaitRoom();
    }

    /** Back-pressure: blocks the writer while the queue holds more than its bound. */
    @GuardedBy("lock")
    private void awaitRoom() {
        if (heldBytes <= config.maxBytes()) {
            return;
        }
        seal();
        long start = System.nanoTime();
        boolean interrupted = false;
        while (heldBytes > config.maxBytes() && !sealed.isEmpty() && failure == null && !closed) {
            try {
                lock.wait();
            } catch (InterruptedException e) {
                interrupted = true;
                break;
            }
        }
        metrics.backPressured(System.nanoTime() - start);
        if (interrupted) {
            Thread.currentThread().interrupt();
            throw new WriteQueueException(
                    "interrupted while waiting for room in the write queue of table " + table,
                    null);
        }
        checkUsable();
    }

    @GuardedBy("lock")
    private void seal() {
        if (open.opCount == 0) {
            return;
        }
        Segment segment = open;
        open = new Segment(table);
        sealed.addLast(segment);
        if (sealed.size() == 1) {
            send(segment);
        }
    }

    @GuardedBy("lock")
    private void send(Segment segment) {
        if (failure != null || closed) {
            return;
        }
        segment.sentAtNanos = System.nanoTime();
        metrics.batchSent(segment.opCount, segment.bytes);
        CompletableFuture<WriteResult> written;
        try {
            written = store.writeAsync(segment.batch);
        } catch (RuntimeException e) {
            written = CompletableFuture.failedFuture(e);
        }
        written.whenComplete((result, error) -> completed(segment, result, error));
    }

    private void completed(Segment segment, WriteResult result, Throwable error) {
        synchronized (lock) {
            if (closed) {
                return;
            }
            if (error != null) {
                if (failure == null) {
                    failure = error;
                }
                failPendingSnapshots(
                        new WriteQueueException("a write to table " + table + " failed", error));
                lock.notifyAll();
                return;
            }
            metrics.batchCompleted(System.nanoTime() - segment.sentAtNanos);
            Segment head = sealed.pollFirst();
            if (head != segment) {
                failure = new IllegalStateException("write queue out of order");
                lock.notifyAll();
                return;
            }
            heldBytes -= segment.bytes;
            if (segment.snapshotsTaken != null) {
                segment.snapshotsTaken.complete(result.snapshots());
            }
            Segment next = sealed.peekFirst();
            if (next != null) {
                send(next);
            }
            lock.notifyAll();
        }
    }

    private void flushOnInterval() {
        synchronized (lock) {
            if (failure == null && !closed && open.opCount > 0) {
                seal();
            }
        }
    }

    @GuardedBy("lock")
    private void failPendingSnapshots(Throwable cause) {
        for (Segment s : sealed) {
            if (s.snapshotsTaken != null) {
                s.snapshotsTaken.completeExceptionally(cause);
            }
        }
    }

    @GuardedBy("lock")
    private void checkUsable() {
        if (failure != null) {
            throw new WriteQueueException(
                    "an earlier write to table "
                            + table
                            + " failed; state since the last checkpoint is lost and the task must"
                            + " restart",
                    failure);
        }
        if (closed) {
            throw new WriteQueueException("the write queue of table " + table + " is closed", null);
        }
    }

    @GuardedBy("lock")
    private Iterator<Segment> newestFirst() {
        List<Segment> all = new ArrayList<>(sealed.size() + 1);
        all.add(open);
        Iterator<Segment> older = sealed.descendingIterator();
        while (older.hasNext()) {
            all.add(older.next());
        }
        return all.iterator();
    }

    @Nullable
    private static byte[] applyAppends(@Nullable byte[] base, @Nullable List<byte[]> newestFirst) {
        if (newestFirst == null) {
            return base;
        }
        byte[] result = base;
        for (int i = newestFirst.size() - 1; i >= 0; i--) {
            result = result == null ? newestFirst.get(i) : join(result, newestFirst.get(i));
        }
        return result;
    }

    private static byte[] join(byte[] left, byte[] right) {
        byte[] joined = Arrays.copyOf(left, left.length + 1 + right.length);
        joined[left.length] = DELIMITER;
        System.arraycopy(right, 0, joined, left.length + 1, right.length);
        return joined;
    }

    /** What the ops of one segment do to a key. */
    private static final class Pending {
        static final byte PUT = 0;
        static final byte DELETE = 1;

        /** Appended onto whatever older segments or the store hold. */
        static final byte APPEND = 2;

        static final Pending DELETED = new Pending(DELETE, null);

        final byte kind;
        @Nullable final byte[] value;

        Pending(byte kind, @Nullable byte[] value) {
            this.kind = kind;
            this.value = value;
        }
    }

    /** A batch and its overlay. */
    private static final class Segment {
        final WriteBatch batch;
        final TreeMap<byte[], Pending> overlay = new TreeMap<>(Arrays::compareUnsigned);

        /**
         * Ranges deleted in this segment, as {begin, end}; point entries in the overlay are newer
         * than any of them, because a range delete clears the overlay inside it.
         */
        final List<byte[][]> deletedRanges = new ArrayList<>(0);

        int opCount;
        long bytes;
        long sentAtNanos;
        @Nullable CompletableFuture<List<SnapshotInfo>> snapshotsTaken;

        Segment(String table) {
            this.batch = new WriteBatch(table);
        }

        boolean coveredByDeletedRange(byte[] key) {
            for (byte[][] range : deletedRanges) {
                if (Arrays.compareUnsigned(key, range[0]) >= 0
                        && (range[1].length == 0 || Arrays.compareUnsigned(key, range[1]) < 0)) {
                    return true;
                }
            }
            return false;
        }
    }
}
