package io.taishan.it.job;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricGroup;

/**
 * Where the job's operators report to the test. The MiniCluster runs the tasks in the test's JVM
 * and, without user jars, loads their classes from the test's class loader, so this is shared.
 * Everything is keyed by a run id, one per job submission.
 */
public final class JobRecorder {
    private static final Map<String, Map<Long, KeyFinalState>> FINAL_STATES =
            new ConcurrentHashMap<>();
    private static final Map<String, AtomicLong> DUPLICATE_KEYS = new ConcurrentHashMap<>();
    private static final Map<String, Set<String>> KEYED_BACKENDS = new ConcurrentHashMap<>();
    private static final Map<String, Map<Integer, OpenedSubtask>> OPENED_SUBTASKS =
            new ConcurrentHashMap<>();
    private static final Map<String, AtomicLong> HIGHEST_ATTEMPTS = new ConcurrentHashMap<>();
    private static final Map<String, AtomicLong> LAST_ACTIVITY_NANOS = new ConcurrentHashMap<>();
    private static final Map<String, AtomicLong> RECORDS_PROCESSED = new ConcurrentHashMap<>();

    /**
     * A metric group's metrics as the cluster's reporter holds them; see {@link #readMetricsWith}.
     */
    private static volatile Function<MetricGroup, Map<String, Metric>> metricReader =
            group -> Map.of();

    private JobRecorder() {}

    static void recordFinalState(String runId, KeyFinalState state) {
        KeyFinalState previous =
                FINAL_STATES
                        .computeIfAbsent(runId, id -> new ConcurrentHashMap<>())
                        .put(state.key, state);
        if (previous != null) {
            DUPLICATE_KEYS.computeIfAbsent(runId, id -> new AtomicLong()).incrementAndGet();
        }
    }

    static void recordKeyedBackend(String runId, String backendClassName) {
        KEYED_BACKENDS
                .computeIfAbsent(runId, id -> ConcurrentHashMap.newKeySet())
                .add(backendClassName);
    }

    /**
     * Flink offers no way to read a metric group back: the cluster installs a reader over its
     * metric reporter, which sees every metric as it is registered.
     */
    public static void readMetricsWith(Function<MetricGroup, Map<String, Metric>> reader) {
        metricReader = reader;
    }

    static void recordOpened(String runId, int subtask, int keyGroups, MetricGroup operatorGroup) {
        // addGroup returns the backend's group when it exists (an empty one for other backends).
        MetricGroup taishan = operatorGroup.addGroup("taishan");
        Map<String, Long> values = new LinkedHashMap<>();
        for (String name : OpenedSubtask.TAISHAN_METRICS) {
            MetricGroup group = taishan;
            String[] path = name.split("\\.");
            for (int i = 0; i < path.length - 1; i++) {
                group = group.addGroup(path[i]);
            }
            Metric metric = metricReader.apply(group).get(path[path.length - 1]);
            if (metric instanceof Counter) {
                values.put(name, ((Counter) metric).getCount());
            } else if (metric instanceof Gauge
                    && ((Gauge<?>) metric).getValue() instanceof Number) {
                values.put(name, ((Number) ((Gauge<?>) metric).getValue()).longValue());
            }
        }
        OPENED_SUBTASKS
                .computeIfAbsent(runId, id -> new ConcurrentHashMap<>())
                .put(subtask, new OpenedSubtask(subtask, keyGroups, Map.copyOf(values)));
    }

    static void recordActivity(String runId) {
        LAST_ACTIVITY_NANOS.computeIfAbsent(runId, id -> new AtomicLong()).set(System.nanoTime());
    }

    static void recordProcessed(String runId) {
        RECORDS_PROCESSED.computeIfAbsent(runId, id -> new AtomicLong()).incrementAndGet();
        recordActivity(runId);
    }

    /**
     * Records the stateful operator has processed in the run, replays after a failover included.
     */
    public static long recordsProcessed(String runId) {
        AtomicLong processed = RECORDS_PROCESSED.get(runId);
        return processed == null ? 0 : processed.get();
    }

    /** When the stateful operator last processed a record or fired a timer (System.nanoTime). */
    public static long lastActivityNanos(String runId) {
        AtomicLong last = LAST_ACTIVITY_NANOS.get(runId);
        return last == null ? 0 : last.get();
    }

    static void recordAttempt(String runId, int attemptNumber) {
        HIGHEST_ATTEMPTS
                .computeIfAbsent(runId, id -> new AtomicLong())
                .accumulateAndGet(attemptNumber, Math::max);
    }

    /** The highest attempt number a stateful subtask of the run opened with: 0 if none failed. */
    public static long highestAttempt(String runId) {
        AtomicLong attempt = HIGHEST_ATTEMPTS.get(runId);
        return attempt == null ? 0 : attempt.get();
    }

    /** The subtasks of the stateful operator that have opened so far, by index. */
    public static Map<Integer, OpenedSubtask> openedSubtasks(String runId) {
        return Map.copyOf(OPENED_SUBTASKS.getOrDefault(runId, Map.of()));
    }

    public static Map<Long, KeyFinalState> finalStates(String runId) {
        return Map.copyOf(FINAL_STATES.getOrDefault(runId, Map.of()));
    }

    public static long duplicateKeys(String runId) {
        AtomicLong duplicates = DUPLICATE_KEYS.get(runId);
        return duplicates == null ? 0 : duplicates.get();
    }

    /** Class names of the keyed state backends the stateful operator's subtasks ran on. */
    public static Set<String> keyedBackends(String runId) {
        return Set.copyOf(KEYED_BACKENDS.getOrDefault(runId, Set.of()));
    }
}
