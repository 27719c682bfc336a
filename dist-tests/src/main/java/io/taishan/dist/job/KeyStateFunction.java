package io.taishan.dist.job;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
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
 * Keeps value, list and map state per key, moved along by processing-time timers, and emits the
 * key's complete state once, when the input has ended (the final watermark fires the event-time
 * timer at {@code Long.MAX_VALUE}). Every part of it is a function of the set of records the key
 * got: a lost record, a replayed one or a lost timer changes it.
 */
public class KeyStateFunction extends KeyedProcessFunction<Long, Long, String> {
    private static final long serialVersionUID = 1L;

    public static final long HISTOGRAM_BUCKETS = 16;

    private static final long DRAIN_DELAY_MILLIS = 50;

    private transient ValueState<Long> count;
    private transient ValueState<Long> sum;
    private transient ValueState<Long> drainAt;
    private transient ListState<Long> values;
    private transient ListState<Long> undrained;
    private transient MapState<Long, Long> histogram;

    @Override
    public void open(OpenContext openContext) {
        count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        sum = getRuntimeContext().getState(new ValueStateDescriptor<>("sum", Types.LONG));
        drainAt = getRuntimeContext().getState(new ValueStateDescriptor<>("drain-at", Types.LONG));
        values = getRuntimeContext().getListState(new ListStateDescriptor<>("values", Types.LONG));
        undrained =
                getRuntimeContext()
                        .getListState(new ListStateDescriptor<>("undrained", Types.LONG));
        histogram =
                getRuntimeContext()
                        .getMapState(new MapStateDescriptor<>("histogram", Types.LONG, Types.LONG));
    }

    @Override
    public void processElement(Long index, Context ctx, Collector<String> out) throws Exception {
        long value = Schedule.value(index);
        Long seen = count.value();
        if (seen == null) {
            ctx.timerService().registerEventTimeTimer(Long.MAX_VALUE);
            seen = 0L;
        }
        count.update(seen + 1);
        sum.update((sum.value() == null ? 0 : sum.value()) + value);
        values.add(value);
        undrained.add(value);
        if (drainAt.value() == null) {
            long at = ctx.timerService().currentProcessingTime() + DRAIN_DELAY_MILLIS;
            ctx.timerService().registerProcessingTimeTimer(at);
            drainAt.update(at);
        }
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<String> out)
            throws Exception {
        drain();
        if (ctx.timeDomain() == TimeDomain.PROCESSING_TIME) {
            drainAt.clear();
        } else if (timestamp == Long.MAX_VALUE) {
            out.collect(finalState(ctx.getCurrentKey()));
        }
    }

    /** Moves the values no processing-time timer has counted yet into the histogram. */
    private void drain() throws Exception {
        for (long value : undrained.get()) {
            long bucket = value % HISTOGRAM_BUCKETS;
            Long bucketCount = histogram.get(bucket);
            histogram.put(bucket, (bucketCount == null ? 0 : bucketCount) + 1);
        }
        undrained.clear();
    }

    private String finalState(long key) throws Exception {
        Map<Long, Long> buckets = new TreeMap<>();
        for (Map.Entry<Long, Long> entry : histogram.entries()) {
            buckets.put(entry.getKey(), entry.getValue());
        }
        List<Long> all = new ArrayList<>();
        values.get().forEach(all::add);
        Collections.sort(all);
        return format(key, count.value(), sum.value(), buckets, all);
    }

    /** One key's final state as the job writes it and a test expects it. */
    public static String format(
            long key, long count, long sum, Map<Long, Long> histogram, List<Long> sortedValues) {
        return "key="
                + key
                + " count="
                + count
                + " sum="
                + sum
                + " histogram="
                + histogram
                + " values="
                + sortedValues;
    }
}
