package io.taishan.it.job;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

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
