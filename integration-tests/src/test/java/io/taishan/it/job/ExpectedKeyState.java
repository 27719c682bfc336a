package io.taishan.it.job;

import java.util.ArrayList;
import java.util.TreeMap;

/**
 * What {@link KeyStateFunction} must end with for one key, computed straight from the {@link
 * EventSchedule} without Flink: an independent check that the reference run itself is right.
 */
public final class ExpectedKeyState {
    private ExpectedKeyState() {}

    public static KeyFinalState of(EventSchedule schedule, long key) {
        KeyFinalState state = new KeyFinalState();
        state.key = key;
        state.count = schedule.recordsPerKey();
        state.lastSeq = schedule.recordsPerKey() - 1;
        state.histogram = new TreeMap<>();
        TreeMap<Long, Long> windowSums = new TreeMap<>();
        for (int seq = 0; seq < schedule.recordsPerKey(); seq++) {
            long value = EventSchedule.value(key, seq);
            state.sum += value;
            state.histogram.merge(value % KeyStateFunction.HISTOGRAM_BUCKETS, 1L, Long::sum);
            windowSums.merge(
                    seq * EventSchedule.TIME_STEP / KeyStateFunction.WINDOW_SIZE, value, Long::sum);
        }
        state.closedWindows = new ArrayList<>();
        windowSums.forEach((window, sum) -> state.closedWindows.add("w" + window + "=" + sum));
        state.openWindowSums = new TreeMap<>();
        return state;
    }
}
