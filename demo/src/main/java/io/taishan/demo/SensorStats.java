package io.taishan.demo;

import java.util.List;
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
 * Per sensor: value state (count, sum, the pending drain timer), list state (values not yet in the
 * histogram), map state (the histogram). A processing-time timer drains the list into the map a
 * little after a value arrives; an event-time timer at the end of time fires on the final watermark
 * only, i.e. when the input has ended, and reports the sensor's totals.
 *
 * <p>Every update is commutative, so the totals depend on the input alone, not on the order in
 * which the source's splits interleave, nor on when a drain timer fires.
 */
final class SensorStats extends KeyedProcessFunction<Long, Reading, SensorTotals> {
    private static final long serialVersionUID = 1L;

    static final String COUNT = "count";
    static final String SUM = "sum";
    static final String DRAIN_TIMER = "drain-timer";
    static final String UNDRAINED = "undrained";
    static final String HISTOGRAM = "histogram";

    /** Flink's names of the timer queues of a keyed process operator, stored like any state. */
    static final String EVENT_TIMERS = "_timer_state/event_user-timers";

    static final String PROCESSING_TIMERS = "_timer_state/processing_user-timers";

    static final List<String> STATE_NAMES =
            List.of(COUNT, SUM, DRAIN_TIMER, UNDRAINED, HISTOGRAM, EVENT_TIMERS, PROCESSING_TIMERS);

    private static final long DRAIN_DELAY_MILLIS = 300;

    private final String runName;

    private transient ValueState<Long> count;
    private transient ValueState<Long> sum;
    private transient ValueState<Long> drainTimer;
    private transient ListState<Integer> undrained;
    private transient MapState<Integer, Long> histogram;

    SensorStats(String runName) {
        this.runName = runName;
    }

    @Override
    public void open(OpenContext openContext) {
        count = getRuntimeContext().getState(new ValueStateDescriptor<>(COUNT, Types.LONG));
        sum = getRuntimeContext().getState(new ValueStateDescriptor<>(SUM, Types.LONG));
        drainTimer =
                getRuntimeContext().getState(new ValueStateDescriptor<>(DRAIN_TIMER, Types.LONG));
        undrained =
                getRuntimeContext().getListState(new ListStateDescriptor<>(UNDRAINED, Types.INT));
        histogram =
                getRuntimeContext()
                        .getMapState(new MapStateDescriptor<>(HISTOGRAM, Types.INT, Types.LONG));
    }

    @Override
    public void processElement(Reading reading, Context ctx, Collector<SensorTotals> out)
            throws Exception {
        Long seen = count.value();
        if (seen == null) {
            ctx.timerService().registerEventTimeTimer(Long.MAX_VALUE);
            seen = 0L;
        }
        count.update(seen + 1);
        Long total = sum.value();
        sum.update((total == null ? 0 : total) + reading.value);
        undrained.add(reading.value);
        if (drainTimer.value() == null) {
            long at = ctx.timerService().currentProcessingTime() + DRAIN_DELAY_MILLIS;
            ctx.timerService().registerProcessingTimeTimer(at);
            drainTimer.update(at);
        }
        DemoRecorder.processed(runName);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<SensorTotals> out)
            throws Exception {
        DemoRecorder.timerFired(runName, ctx.timeDomain());
        drain();
        Long pendingDrain = drainTimer.value();
        drainTimer.clear();
        if (ctx.timeDomain() == TimeDomain.PROCESSING_TIME) {
            return;
        }
        // Nothing is left to drain: the sensor's last state holds no timers.
        if (pendingDrain != null) {
            ctx.timerService().deleteProcessingTimeTimer(pendingDrain);
        }
        SensorTotals totals = new SensorTotals();
        totals.sensor = ctx.getCurrentKey();
        totals.count = count.value() == null ? 0 : count.value();
        totals.sum = sum.value() == null ? 0 : sum.value();
        totals.histogram = new long[SensorInput.HISTOGRAM_BUCKETS];
        for (int bucket = 0; bucket < SensorInput.HISTOGRAM_BUCKETS; bucket++) {
            Long n = histogram.get(bucket);
            totals.histogram[bucket] = n == null ? 0 : n;
        }
        Iterable<Integer> left = undrained.get();
        if (left != null) {
            for (Integer ignored : left) {
                totals.undrained++;
            }
        }
        out.collect(totals);
    }

    private void drain() throws Exception {
        Iterable<Integer> values = undrained.get();
        if (values == null) {
            return;
        }
        for (int value : values) {
            int bucket = SensorInput.bucket(value);
            Long n = histogram.get(bucket);
            histogram.put(bucket, (n == null ? 0 : n) + 1);
        }
        undrained.clear();
    }
}
