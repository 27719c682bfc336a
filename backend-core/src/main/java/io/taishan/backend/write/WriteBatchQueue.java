package io.taishan.backend.write;

import io.taishan.backend.write.PendingWrites.Effect;
import io.taishan.backend.write.PendingWrites.Lookup;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.client.WriteResult;
import io.taishan.kv.protocol.KvLimits;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.apache.flink.metrics.MetricGroup;

/**
 * The ordered, batched stream of one subtask's writes to its table, and the index of what is not
 * acknowledged yet ({@link PendingWrites}).
 *
 * <p>Mutations go into an open segment (a {@link WriteBatch}), which is sealed and sent with {@link
 * KvStore#writeAsync} when it reaches the byte or op threshold, on the flush interval, or at a
 * snapshot marker. One batch is in flight at a time, because two concurrent writes have no order on
 * the server; sealed segments wait behind it. Every mutation is also recorded in the pending index
 * until the server acknowledges its segment, so a read of any key, and a scan of any range, sees
 * every write made so far without waiting for the server.
 *
 * <p>Memory is bounded: when pending and in-flight segments together exceed {@code maxBytes}, the
 * writer waits for the in-flight batch to complete (back-pressure). A failed batch poisons the
 * queue: every later call, and every pending snapshot, fails with its cause.
 *
 * <p>Keys must be unique across shards (ours carry the key group), since the index is keyed by key
 * bytes alone. Mutating calls come from one thread (the task thread); lookups may come from others
 * (queryable state); completions arrive on gRPC threads. Everything is guarded by one lock, taken
 * once per call.
 */
public final class WriteBatchQueue
        implements AutoCloseable, WriteQueueMetrics.WriteBatchQueueDepth {
    /**
     * Per-op bookkeeping beyond the key and value bytes: index entries, tree node, protobuf
     * framing.
     */
    private static final int OP_OVERHEAD_BYTES = 160;

    private final KvStore store;
    private final String table;
    private final WriteQueueConfig config;
    private final KvLimits limits;
    private final int maxOpsPerBatch;
    private final long maxBytesPerBatch;
    private final ScheduledFuture<?> intervalFlush;
    private final WriteQueueMetrics metrics;

    private final Object lock = new Object();

    @GuardedBy("lock")
    private final PendingWrites pending = new PendingWrites();

    @GuardedBy("lock")
    private Segment open;

    /** Sealed segments in send order; the first one is in flight. */
    @GuardedBy("lock")
    private final ArrayDeque<Segment> sealed = new ArrayDeque<>();

    @GuardedBy("lock")
    private long nextSegmentId = 1;

    /** Every segment up to this id has been applied by the server. */
    @GuardedBy("lock")
    private long acknowledgedUpTo;

    @GuardedBy("lock")
    private long heldBytes;

    @GuardedBy("lock")
    @Nullable
    private Throwable failure;

    @GuardedBy("lock")
    private boolean closed;

    /** Told of every acknowledged batch's result, outside the lock. */
    private volatile Consumer<WriteResult> acknowledgementListener = result -> {};

    public WriteBatchQueue(
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
        this.open = newSegment();
        long intervalMillis = Math.max(1, config.flushInterval().toMillis());
        this.intervalFlush =
                scheduler.scheduleWithFixedDelay(
                        this::flushOnInterval,
                        intervalMillis,
                        intervalMillis,
                        TimeUnit.MILLISECONDS);
    }

    public String table() {
        return table;
    }

    /** Who is told of each acknowledged batch's {@link WriteResult} (its filter versions). */
    public void setAcknowledgementListener(Consumer<WriteResult> listener) {
        this.acknowledgementListener = listener;
    }

    /** The segment holding the latest write so far (0 before the first). */
    public long lastWrittenSegmentId() {
        synchronized (lock) {
            return open.opCount > 0 ? open.id : open.id - 1;
        }
    }

    // ---- mutations

    public void put(ShardLease lease, byte[] key, byte[] value) {
        synchronized (lock) {
            Segment segment = segmentFor(key, value);
            if (limits.chunked(value.length)) {
                // The pending index holds this very array already: a large value is not copied.
                segment.batch.putShared(lease, key, value);
            } else {
                segment.batch.put(lease, key, value);
            }
            segment.entries.add(pending.put(key, value, segment.id));
            added(segment, key.length + value.length);
        }
    }

    /**
     * A put of a key that is only ever scanned (timers): the server leaves it out of the shard's
     * Bloom filter, which then stays sized for the keys that are looked up.
     */
    public void putScanOnly(ShardLease lease, byte[] key, byte[] value) {
        synchronized (lock) {
            Segment segment = segmentFor(key, value);
            segment.batch.putScanOnly(lease, key, value);
            segment.entries.add(pending.put(key, value, segment.id));
            added(segment, key.length + value.length);
        }
    }

    public void delete(ShardLease lease, byte[] key) {
        synchronized (lock) {
            Segment segment = segmentFor(key, null);
            segment.batch.delete(lease, key);
            segment.entries.add(pending.delete(key, segment.id));
            added(segment, key.length);
        }
    }

    /** Server-side append with the list delimiter; never reads. */
    public void append(ShardLease lease, byte[] key, byte[] value) {
        synchronized (lock) {
            Segment segment = segmentFor(key, value);
            if (limits.chunked(value.length)) {
                segment.batch.appendShared(lease, key, value);
            } else {
                segment.batch.append(lease, key, value);
            }
            segment.entries.add(pending.append(key, value, segment.id));
            added(segment, key.length + value.length);
        }
    }

    /** Deletes {@code [begin, end)} of the lease's shard. */
    public void deleteRange(ShardLease lease, byte[] begin, byte[] end) {
        synchronized (lock) {
            Segment segment = segmentFor(begin, end);
            segment.batch.deleteRange(lease, begin, end);
            pending.deleteRange(begin, end, segment.id);
            added(segment, begin.length + end.length);
        }
    }

    /**
     * Puts a snapshot marker for {@code snapshotId} into the write stream of every shard and sends
     * it without waiting. The future completes with the snapshots once the server has taken them
     * all, or fails with the cause.
     */
    public CompletableFuture<List<SnapshotInfo>> snapshotMarkers(
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

    // ---- what reads see

    /**
     * What the unacknowledged writes do to {@code key}; {@link Effect#APPENDS} carries the segment
     * of the oldest pending operand, see {@link #acknowledgedUpTo()}.
     */
    public PendingWrites.Lookup lookup(byte[] key) {
        synchronized (lock) {
            checkUsable();
            return pending.lookup(key);
        }
    }

    /**
     * Every segment up to this id is applied by the server. A remote read started when this was
     * {@code a} and finished when it was {@code b} saw the segments up to {@code a}, none after
     * {@code b}, and may or may not have seen those in between.
     */
    public long acknowledgedUpTo() {
        synchronized (lock) {
            return acknowledgedUpTo;
        }
    }

    /**
     * What the pending writes do to the keys of {@code [start, end)} ({@code end} empty:
     * unbounded), at most {@code maxItems} keys from {@code start}, for a scan to merge into the
     * server's page. Take it before reading the page: an acknowledgement in between then leaves an
     * effect in both, never in neither.
     */
    public PendingRange pendingRange(byte[] start, byte[] end, int maxItems) {
        synchronized (lock) {
            checkUsable();
            List<PendingRange.Item> items = new ArrayList<>();
            byte[] coveredEnd = end;
            for (PendingWrites.Entry entry : pending.entries(start, end).values()) {
                if (items.size() == maxItems) {
                    coveredEnd = entry.key();
                    break;
                }
                Lookup lookup = entry.lookup();
                items.add(
                        new PendingRange.Item(
                                entry.key(),
                                lookup.effect(),
                                lookup.bytes(),
                                lookup.oldestSegment()));
            }
            return new PendingRange(items, pending.rangesOverlapping(start, end), coveredEnd);
        }
    }

    /** Waits until the server has applied every segment up to {@code segmentId}. */
    public void awaitAcknowledged(long segmentId) {
        synchronized (lock) {
            checkUsable();
            if (open.id <= segmentId && open.opCount > 0) {
                seal();
            }
            awaitLocked(() -> acknowledgedUpTo >= segmentId);
        }
    }

    /** Sends everything pending and waits until the server has applied it. */
    public void flushAndWait() {
        synchronized (lock) {
            checkUsable();
            seal();
            awaitLocked(sealed::isEmpty);
        }
    }

    private interface Condition {
        boolean holds();
    }

    @GuardedBy("lock")
    private void awaitLocked(Condition done) {
        boolean interrupted = false;
        try {
            while (!done.holds() && failure == null && !closed) {
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

    /** Throws the cause of a failed flush, if any. */
    public void checkHealthy() {
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

    /** Keys with a pending entry in the index. */
    public int pendingKeys() {
        synchronized (lock) {
            return pending.size();
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

    /**
     * Completes once the batch the server may be applying now has finished, however it ended; at
     * once if none is in flight. After {@link #close()} nothing more is sent, so past this point
     * the server sees no write of this queue: what must come after every write (dropping the
     * snapshots an aborted checkpoint cut) waits for it.
     */
    public CompletableFuture<Void> inFlightWrite() {
        synchronized (lock) {
            Segment head = sealed.peekFirst();
            if (head == null || head.written == null) {
                return CompletableFuture.completedFuture(null);
            }
            return head.written.handle((result, error) -> null);
        }
    }

    // ---- internals

    @GuardedBy("lock")
    private Segment newSegment() {
        return new Segment(nextSegmentId++, table);
    }

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
                            + ", the kv-server's limits.max-value-bytes)",
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
        // Key and value are held twice: in the index and in the protobuf batch (a large value
        // once, but it is counted twice all the same: one more in the gRPC buffers and on the
        // server while it is sent). Alone over the bound, it waits only for its own batch.
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
        try {
            awaitLocked(() -> heldBytes <= config.maxBytes() || sealed.isEmpty());
        } finally {
            metrics.backPressured(System.nanoTime() - start);
        }
    }

    @GuardedBy("lock")
    private void seal() {
        if (open.opCount == 0) {
            return;
        }
        Segment segment = open;
        open = newSegment();
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
        segment.written = written;
        written.whenComplete((result, error) -> completed(segment, result, error));
    }

    private void completed(Segment segment, WriteResult result, Throwable error) {
        completedLocked(segment, result, error);
        if (error == null) {
            acknowledgementListener.accept(result);
        }
    }

    private void completedLocked(Segment segment, WriteResult result, Throwable error) {
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
            acknowledgedUpTo = segment.id;
            heldBytes -= segment.bytes;
            // The next batch goes before the index is cleaned up: the server applies it meanwhile.
            Segment next = sealed.peekFirst();
            if (next != null) {
                send(next);
            }
            pending.acknowledged(segment.id, segment.entries);
            if (segment.snapshotsTaken != null) {
                segment.snapshotsTaken.complete(result.snapshots());
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

    /** A batch, its id, and the index entries it touched (for the index, when acknowledged). */
    private static final class Segment {
        final long id;
        final WriteBatch batch;
        final List<PendingWrites.Entry> entries = new ArrayList<>();
        int opCount;
        long bytes;
        long sentAtNanos;
        @Nullable CompletableFuture<WriteResult> written;
        @Nullable CompletableFuture<List<SnapshotInfo>> snapshotsTaken;

        Segment(long id, String table) {
            this.id = id;
            this.batch = new WriteBatch(table);
        }
    }
}
