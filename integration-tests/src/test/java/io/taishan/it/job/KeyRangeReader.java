package io.taishan.it.job;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.core.io.InputStatus;

/**
 * Reads its splits interleaved, one record at a time, each split through its own split-local output
 * so the watermark is the minimum over the splits and no record is ever late. An optional per-split
 * rate keeps a job running long enough to be checkpointed, cancelled and restored; the rate changes
 * timing only, never which records a split emits or in which order.
 */
final class KeyRangeReader implements SourceReader<Event, KeyRangeSplit> {

    private static final class Cursor {
        KeyRangeSplit split;
        SourceOutput<Event> output;
        long nextDueNanos;

        Cursor(KeyRangeSplit split, long nowNanos) {
            this.split = split;
            this.nextDueNanos = nowNanos;
        }
    }

    private static final long HELD_POLL_NANOS = 10_000_000;

    private final long nanosPerRecord;
    @Nullable private final String gate;
    private final ArrayDeque<Cursor> cursors = new ArrayDeque<>();
    private boolean noMoreSplits;
    private CompletableFuture<Void> availability = CompletableFuture.completedFuture(null);
    private ScheduledExecutorService wakeUps;

    /**
     * @param recordsPerSecondPerSplit {@code <= 0} means as fast as possible
     * @param gate the run id whose {@link SourceGate} may hold this reader, or null
     */
    KeyRangeReader(double recordsPerSecondPerSplit, @Nullable String gate) {
        this.nanosPerRecord =
                recordsPerSecondPerSplit <= 0 ? 0 : (long) (1e9 / recordsPerSecondPerSplit);
        this.gate = gate;
    }

    @Override
    public void start() {
        if (nanosPerRecord > 0 || gate != null) {
            wakeUps =
                    Executors.newSingleThreadScheduledExecutor(
                            runnable -> {
                                Thread thread = new Thread(runnable, "key-range-reader-wake-up");
                                thread.setDaemon(true);
                                return thread;
                            });
        }
    }

    @Override
    public InputStatus pollNext(ReaderOutput<Event> output) {
        if (cursors.isEmpty()) {
            return noMoreSplits ? InputStatus.END_OF_INPUT : waitFor(-1);
        }
        long now = System.nanoTime();
        long shortestWait = Long.MAX_VALUE;
        long limit = gate == null ? Long.MAX_VALUE : SourceGate.limit(gate);
        for (int i = 0, n = cursors.size(); i < n; i++) {
            Cursor cursor = cursors.pollFirst();
            if (cursor.output == null) {
                cursor.output = output.createOutputForSplit(cursor.split.splitId());
            }
            if (cursor.split.position() >= limit) {
                shortestWait = Math.min(shortestWait, HELD_POLL_NANOS);
                cursors.addLast(cursor);
                continue;
            }
            long wait = cursor.nextDueNanos - now;
            if (nanosPerRecord > 0 && wait > 0) {
                shortestWait = Math.min(shortestWait, wait);
                cursors.addLast(cursor);
                continue;
            }
            cursor.output.collect(EventSchedule.event(cursor.split, cursor.split.position()));
            cursor.split = cursor.split.advance();
            if (cursor.split.isFinished()) {
                output.releaseOutputForSplit(cursor.split.splitId());
            } else {
                // Paced from the actual emission, so a stall never turns into a burst.
                cursor.nextDueNanos = now + nanosPerRecord;
                cursors.addLast(cursor);
            }
            return InputStatus.MORE_AVAILABLE;
        }
        return waitFor(shortestWait);
    }

    private InputStatus waitFor(long delayNanos) {
        if (availability.isDone()) {
            availability = new CompletableFuture<>();
        }
        if (delayNanos >= 0) {
            CompletableFuture<Void> toComplete = availability;
            wakeUps.schedule(() -> toComplete.complete(null), delayNanos, TimeUnit.NANOSECONDS);
        }
        return InputStatus.NOTHING_AVAILABLE;
    }

    @Override
    public List<KeyRangeSplit> snapshotState(long checkpointId) {
        List<KeyRangeSplit> state = new ArrayList<>(cursors.size());
        for (Cursor cursor : cursors) {
            state.add(cursor.split);
        }
        return state;
    }

    @Override
    public CompletableFuture<Void> isAvailable() {
        return availability;
    }

    @Override
    public void addSplits(List<KeyRangeSplit> splits) {
        long now = System.nanoTime();
        for (KeyRangeSplit split : splits) {
            if (!split.isFinished()) {
                cursors.addLast(new Cursor(split, now));
            }
        }
        availability.complete(null);
    }

    @Override
    public void notifyNoMoreSplits() {
        noMoreSplits = true;
        availability.complete(null);
    }

    @Override
    public void close() {
        if (wakeUps != null) {
            wakeUps.shutdownNow();
        }
    }
}
