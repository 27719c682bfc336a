package io.taishan.it.job;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Lets a test hold a run's source at a position of every split and let it go again: a held reader
 * emits nothing past that position, so once the operator has worked through what came before, the
 * job sends no state call, which is how a quiet operator or a lull in the input looks to the state
 * backend. Holding at positions rather than pausing at moments makes what the job has seen at each
 * step independent of the machine's speed. Shared through the test's class loader, as {@link
 * JobRecorder}.
 */
public final class SourceGate {
    private static final Map<String, Long> HELD_AT = new ConcurrentHashMap<>();

    private SourceGate() {}

    /** Every split of the run emits its records before {@code position}, then waits. */
    public static void holdAt(String runId, long position) {
        HELD_AT.put(runId, position);
    }

    public static void release(String runId) {
        HELD_AT.remove(runId);
    }

    /** The position no split of the run may pass now. */
    static long limit(String runId) {
        return HELD_AT.getOrDefault(runId, Long.MAX_VALUE);
    }
}
