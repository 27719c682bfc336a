package io.taishan.benchmarks.job;

import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.apache.flink.streaming.api.functions.source.SourceFunction;

/**
 * The generator of the issue 8 jobs: the phases one after the other, keys only. A legacy {@code
 * SourceFunction} because a phase may be paced and may end in a pause, which a {@code
 * DataGeneratorSource} (one rate for the whole input) cannot express.
 */
@SuppressWarnings("deprecation")
public final class PhasedKeySource implements SourceFunction<Long> {
    private static final long serialVersionUID = 1L;
    private static final long SEED = 20_261_201L;
    private static final int BATCH = 64;

    private final List<Phase> phases;
    private volatile boolean running = true;

    public PhasedKeySource(List<Phase> phases) {
        this.phases = List.copyOf(phases);
    }

    @Override
    public void run(SourceContext<Long> ctx) throws Exception {
        long seed = SEED;
        for (Phase phase : phases) {
            Phase.KeySequence keys = phase.sequence(seed++);
            long start = System.nanoTime();
            double nanosPerRecord =
                    phase.recordsPerSecond() > 0 ? 1e9 / phase.recordsPerSecond() : 0;
            for (long i = 0; i < phase.records() && running; ) {
                long end = Math.min(phase.records(), i + BATCH);
                // One lock per batch: the lock is the cost of a legacy source, not the keys.
                synchronized (ctx.getCheckpointLock()) {
                    for (; i < end; i++) {
                        ctx.collect(keys.key(i));
                    }
                }
                if (nanosPerRecord > 0) {
                    long wait = start + (long) (i * nanosPerRecord) - System.nanoTime();
                    if (wait > 0) {
                        LockSupport.parkNanos(wait);
                    }
                }
            }
            if (phase.pauseAfterMillis() > 0 && running) {
                Thread.sleep(phase.pauseAfterMillis());
            }
        }
    }

    @Override
    public void cancel() {
        running = false;
    }
}
