package io.taishan.benchmarks.keygroups;

import io.taishan.benchmarks.keygroups.CellResult.PhaseResult;
import io.taishan.benchmarks.state.BackendUnderTest;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import javax.annotation.Nullable;

/**
 * What one phase of a side-by-side harness measures: its timed span (restartable after untimed
 * preparation), named parts, the operator's RPCs over the phase, the backend's footprint and named
 * sizes; then the phase's {@link PhaseResult}. The phase body runs on its own thread, the harness
 * reads the result on its own once the body ended or timed out.
 */
public final class PhaseMeasure {
    private final Supplier<BackendUnderTest> under;
    private long startNanos;
    private long stopNanos;
    private final Map<String, Double> parts = new LinkedHashMap<>();
    private Map<String, Long> rpcs = Map.of();
    private Map<String, Long> rpcsBefore = Map.of();
    private final Map<String, Long> sizes = new LinkedHashMap<>();
    @Nullable private Footprint footprint;

    /**
     * @param under the backend under test now (null between its runs)
     */
    public PhaseMeasure(Supplier<BackendUnderTest> under) {
        this.under = under;
    }

    /** Starts (or restarts, after untimed preparation) the timed span. */
    public void start() {
        startNanos = System.nanoTime();
        stopNanos = 0;
    }

    public void stop() {
        stopNanos = System.nanoTime();
    }

    public double millis() {
        long end = stopNanos == 0 ? System.nanoTime() : stopNanos;
        return (end - startNanos) / 1e6;
    }

    public void part(String name, long nanos) {
        parts.put(name, nanos / 1e6);
    }

    public void size(String name, long value) {
        sizes.put(name, value);
    }

    /** The operator's calls so far: this phase counts from here. */
    public void from(OperatorUnderTest operator) {
        rpcsBefore = operator.rpcs(under.get());
    }

    /** The operator's calls since {@link #from} (or since it was opened). */
    public void rpcs(OperatorUnderTest operator) {
        Map<String, Long> now = new TreeMap<>(operator.rpcs(under.get()));
        rpcsBefore.forEach((kind, count) -> now.merge(kind, -count, Long::sum));
        now.values().removeIf(count -> count == 0);
        rpcs = now;
    }

    public void footprint() {
        footprint = Footprint.of(under.get().stateHome());
    }

    /**
     * The footprint now, unless the body took one. Read from outside the process: safe while the
     * phase's thread is stuck, and it shows what a failure left (e.g. the open-files limit).
     */
    public void footprintIfAbsent() {
        BackendUnderTest backend = under.get();
        if (footprint == null && backend != null) {
            footprint = Footprint.of(backend.stateHome());
        }
    }

    public PhaseResult result(String phase, String outcome, @Nullable String reason) {
        return new PhaseResult(phase, outcome, reason, millis(), parts, rpcs, footprint, sizes);
    }
}
