package io.taishan.it.job;

import java.util.ArrayList;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Keeps keyed value, list and map state, driven by records, processing-time timers and event-time
 * timers, and emits each key's complete state once, when the input has ended (the final watermark
 * fires a timer at {@code Long.MAX_VALUE}; cancelling or stopping without drain never does).
 *
 * <p>Every piece of the emitted state is a function of the key's records alone, because they arrive
 * in sequence order and never late (see {@link EventSchedule}); when a processing-time timer fires
 * cannot change the result either: it only moves values from a list into a map, which the final
 * timer finishes. A lost processing-time timer still shows, as {@code overdueDrainTimers}.
 */
public class KeyStateFunction extends KeyedProcessFunction<Long, Event, KeyFinalState> {
    private static final long serialVersionUID = 1L;

    /** Event-time length of the windows whose sums the event-time timers close. */
    public static final long WINDOW_SIZE = 100;

    public static final long HISTOGRAM_BUCKETS = 16;

    static final long DRAIN_DELAY_MILLIS = 20;

    /**
     * A drain timer overdue by this much since it was due, or since this subtask opened if it was
     * due before (a restored timer), has been lost, not delayed. Counting from the open keeps the
     * time between a job's last checkpoint and its restored successor's start out of it: that gap
     * is the restore's business (about a second on HashMap, up to 11 s on a cold kv-server), and a
     * restored timer can only fire once the subtask is open. A scenario notices a lost timer only
     * in a run that lasts longer than this.
     */
    public static final long LOST_TIMER_MILLIS = 5_000;

    private transient ValueState<Long> count;
    private transient ValueState<Long> sum;
    private transient ValueState<Integer> lastSeq;
    private transient ValueState<Long> seqViolations;
    private transient ValueState<Long> drainTimer;
    private transient ValueState<Long> overdueDrainTimers;
    private transient ListState<Long> undrainedValues;
    private transient ListState<String> closedWindows;
    private transient MapState<Long, Long> histogram;
    private transient MapState<Long, Long> openWindowSums;
    private transient long openedAt;

    @Override
    public void open(OpenContext openContext) {
        // Flink's processing time is this clock (SystemProcessingTimeService).
        openedAt = System.currentTimeMillis();
        count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        sum = getRuntimeContext().getState(new ValueStateDescriptor<>("sum", Types.LONG));
        lastSeq = getRuntimeContext().getState(new ValueStateDescriptor<>("last-seq", Types.INT));
        seqViolations =
                getRuntimeContext()
                        .getState(new ValueStateDescriptor<>("seq-violations", Types.LONG));
        drainTimer =
                getRuntimeContext().getState(new ValueStateDescriptor<>("drain-timer", Types.LONG));
        overdueDrainTimers =
                getRuntimeContext()
                        .getState(new ValueStateDescriptor<>("overdue-drain-timers", Types.LONG));
        undrainedValues =
                getRuntimeContext()
                        .getListState(new ListStateDescriptor<>("undrained-values", Types.LONG));
        closedWindows =
                getRuntimeContext()
                        .getListState(new ListStateDescriptor<>("closed-windows", Types.STRING));
        histogram =
                getRuntimeContext()
                        .getMapState(new MapStateDescriptor<>("histogram", Types.LONG, Types.LONG));
        openWindowSums =
                getRuntimeContext()
                        .getMapState(
                                new MapStateDescriptor<>(
                                        "open-window-sums", Types.LONG, Types.LONG));
    }

    @Override
    public void processElement(Event event, Context ctx, Collector<KeyFinalState> out)
            throws Exception {
        Long seen = count.value();
        if (seen == null) {
            ctx.timerService().registerEventTimeTimer(Long.MAX_VALUE);
            seen = 0L;
        }
        count.update(seen + 1);
        sum.update(orZero(sum.value()) + event.value);

        Integer previousSeq = lastSeq.value();
        int expectedSeq = previousSeq == null ? 0 : previousSeq + 1;
        if (event.seq != expectedSeq) {
            seqViolations.update(orZero(seqViolations.value()) + 1);
        }
        lastSeq.update(event.seq);

        long window = event.timestamp / WINDOW_SIZE;
        Long windowSum = openWindowSums.get(window);
        openWindowSums.put(window, (windowSum == null ? 0 : windowSum) + event.value);
        ctx.timerService().registerEventTimeTimer(windowEnd(window));

        undrainedValues.add(event.value);
        long now = ctx.timerService().currentProcessingTime();
        Long drainAt = drainTimer.value();
        if (drainAt == null) {
            long at = now + DRAIN_DELAY_MILLIS;
            ctx.timerService().registerProcessingTimeTimer(at);
            drainTimer.update(at);
        } else if (now - Math.max(drainAt, openedAt) > LOST_TIMER_MILLIS) {
            overdueDrainTimers.update(orZero(overdueDrainTimers.value()) + 1);
        }
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<KeyFinalState> out)
            throws Exception {
        if (ctx.timeDomain() == TimeDomain.PROCESSING_TIME) {
            drainUndrainedValues();
            drainTimer.clear();
        } else if (timestamp == Long.MAX_VALUE) {
            drainUndrainedValues();
            out.collect(snapshot(ctx.getCurrentKey()));
        } else {
            long window = timestamp / WINDOW_SIZE;
            Long windowSum = openWindowSums.get(window);
            // A timer without its window (fired twice, or restored without its state) shows as "?".
            closedWindows.add("w" + window + "=" + (windowSum == null ? "?" : windowSum));
            openWindowSums.remove(window);
        }
    }

    private void drainUndrainedValues() throws Exception {
        Iterable<Long> values = undrainedValues.get();
        if (values == null) {
            return;
        }
        for (long value : values) {
            long bucket = value % HISTOGRAM_BUCKETS;
            Long bucketCount = histogram.get(bucket);
            histogram.put(bucket, (bucketCount == null ? 0 : bucketCount) + 1);
        }
        undrainedValues.clear();
    }

    private KeyFinalState snapshot(long key) throws Exception {
        KeyFinalState state = new KeyFinalState();
        state.key = key;
        state.count = orZero(count.value());
        state.sum = orZero(sum.value());
        state.lastSeq = lastSeq.value() == null ? -1 : lastSeq.value();
        state.seqViolations = orZero(seqViolations.value());
        state.overdueDrainTimers = orZero(overdueDrainTimers.value());
        state.histogram = new TreeMap<>();
        for (Map.Entry<Long, Long> entry : histogram.entries()) {
            state.histogram.put(entry.getKey(), entry.getValue());
        }
        state.closedWindows = new ArrayList<>();
        for (String closed : closedWindows.get()) {
            state.closedWindows.add(closed);
        }
        state.openWindowSums = new TreeMap<>();
        for (Map.Entry<Long, Long> entry : openWindowSums.entries()) {
            state.openWindowSums.put(entry.getKey(), entry.getValue());
        }
        return state;
    }

    static long windowEnd(long window) {
        return (window + 1) * WINDOW_SIZE - 1;
    }

    private static long orZero(Long value) {
        return value == null ? 0 : value;
    }
}
