package io.taishan.demo;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.apache.flink.streaming.api.TimeDomain;

/**
 * Where the job's operators report to the story. The MiniCluster runs the tasks in this JVM and
 * loads their classes from its class path, so static state is shared; everything is keyed by the
 * run's name.
 */
final class DemoRecorder {
    private static final Map<String, LongAdder> PROCESSED = new ConcurrentHashMap<>();
    private static final Map<String, LongAdder> PROCESSING_TIMERS = new ConcurrentHashMap<>();
    private static final Map<String, LongAdder> EVENT_TIMERS = new ConcurrentHashMap<>();
    private static final Map<String, Map<Long, SensorTotals>> TOTALS = new ConcurrentHashMap<>();
    private static final Map<String, LongAdder> DUPLICATE_REPORTS = new ConcurrentHashMap<>();

    private DemoRecorder() {}

    static void processed(String run) {
        adder(PROCESSED, run).increment();
    }

    static void timerFired(String run, TimeDomain domain) {
        adder(domain == TimeDomain.EVENT_TIME ? EVENT_TIMERS : PROCESSING_TIMERS, run).increment();
    }

    static void reported(String run, SensorTotals totals) {
        if (TOTALS.computeIfAbsent(run, r -> new ConcurrentHashMap<>()).put(totals.sensor, totals)
                != null) {
            adder(DUPLICATE_REPORTS, run).increment();
        }
    }

    static long processedCount(String run) {
        return adder(PROCESSED, run).sum();
    }

    static long processingTimersFired(String run) {
        return adder(PROCESSING_TIMERS, run).sum();
    }

    static long eventTimersFired(String run) {
        return adder(EVENT_TIMERS, run).sum();
    }

    static Map<Long, SensorTotals> totals(String run) {
        return Map.copyOf(TOTALS.getOrDefault(run, Map.of()));
    }

    static long duplicateReports(String run) {
        return adder(DUPLICATE_REPORTS, run).sum();
    }

    private static LongAdder adder(Map<String, LongAdder> map, String run) {
        return map.computeIfAbsent(run, r -> new LongAdder());
    }
}
