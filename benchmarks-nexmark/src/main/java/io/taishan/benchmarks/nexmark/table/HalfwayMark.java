package io.taishan.benchmarks.nexmark.table;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The moment the source has made half of a run's events, with the job JVM's and the kv-server's CPU
 * time then, so that the harness can also give the throughput and the CPU per event of the run's
 * second half. The first half carries the JVMs' warm-up (on q3 at 1,000,000 events the JIT compiler
 * took 42–49% of the CPU of each JVM, Taishan's and RocksDB's job JVMs and a fresh kv-server,
 * measured with async-profiler), which the second half mostly does not; Nexmark's own harness
 * likewise starts measuring after a delay ({@code nexmark.metric.monitor.delay}).
 *
 * <p>Like {@link StartGate}, shared through a static field: the MiniCluster runs the job's classes
 * in the harness's JVM. One counter increment per event (two source subtasks contend on it: tens of
 * nanoseconds against the microseconds an event costs).
 */
public final class HalfwayMark {
    private static final AtomicLong MADE = new AtomicLong();
    private static volatile long half = Long.MAX_VALUE;
    private static volatile LongSupplier jobCpuNanos = () -> -1;
    private static volatile LongSupplier serverCpuNanos = () -> -1;
    private static volatile Mark mark;

    /** What was true when the source had made half the events. */
    public record Mark(long events, long millis, long jobCpuNanos, long serverCpuNanos) {}

    private HalfwayMark() {}

    /** Before the job is submitted: a run of {@code events}, and how to read both CPU times. */
    public static void arm(long events, LongSupplier jobCpu, LongSupplier serverCpu) {
        MADE.set(0);
        mark = null;
        jobCpuNanos = jobCpu;
        serverCpuNanos = serverCpu;
        half = events / 2;
    }

    /** The mark, or null if the source did not get halfway. */
    public static Mark mark() {
        return mark;
    }

    static void eventMade() {
        if (MADE.incrementAndGet() == half) {
            mark =
                    new Mark(
                            half,
                            System.currentTimeMillis(),
                            jobCpuNanos.getAsLong(),
                            serverCpuNanos.getAsLong());
        }
    }
}
