package io.taishan.benchmarks.state;

import javax.annotation.Nullable;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * JMH's secondary results of every benchmark of the suite: state operations performed and the
 * server calls they caused, per iteration (JMH sums them over the measured iterations), so the
 * report divides them into RPCs per 1,000 operations. The calls are read from the backend's own
 * metrics after every invocation ({@link StateBenchmarkBase#counted}); zero for backends without a
 * server. Write RPCs still in flight when an iteration ends are counted in the next one.
 *
 * <p>Beside them, the CPU time those operations cost: this JVM's (the task's: the task thread, the
 * backend's own threads, JIT and GC) and, for a backend whose state lives in another process (the
 * kv-server child), that process's, both over the same {@link #cpuOps} operations. The clocks are
 * read at most every {@value #CPU_READ_INTERVAL_MILLIS} ms (the other process's through {@code
 * /proc}, in its 10 ms ticks), a few file reads against the thousands of operations in between; the
 * operations after the last reading of an iteration are left out of all three.
 */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.EVENTS)
public class RpcCounters {
    /** State operations of the iteration. */
    public long ops;

    /** {@code Get}, {@code MultiGet} and {@code Scan} calls: reads that reached the server. */
    public long readRpcs;

    /** Every call to the server, writes included. */
    public long rpcs;

    /** The operations up to the last CPU reading: what the two CPU counters are divided by. */
    public long cpuOps;

    /** CPU time of this JVM over {@link #cpuOps}, in nanoseconds. */
    public long taskJvmCpuNanos;

    /** CPU time of the process holding the state over {@link #cpuOps}; 0 when it is this JVM. */
    public long stateProcessCpuNanos;

    static final long CPU_READ_INTERVAL_MILLIS = 50;

    @Nullable private BackendUnderTest.RpcCount iterationStart;

    @Nullable private CpuClocks.Reading cpuStart;

    private long nextCpuReadNanos;

    @Setup(Level.Iteration)
    public void reset() {
        ops = 0;
        readRpcs = 0;
        rpcs = 0;
        cpuOps = 0;
        taskJvmCpuNanos = 0;
        stateProcessCpuNanos = 0;
        iterationStart = null;
        cpuStart = null;
    }

    boolean started() {
        return ops > 0 || iterationStart != null;
    }

    void start(@Nullable BackendUnderTest.RpcCount now, CpuClocks cpu) {
        cpuStart = cpu.read();
        nextCpuReadNanos = System.nanoTime() + CPU_READ_INTERVAL_MILLIS * 1_000_000;
        iterationStart = now;
        if (now == null) {
            // No server: nothing to read again this iteration.
            iterationStart = new BackendUnderTest.RpcCount(0, 0);
        }
    }

    void add(int operations, @Nullable BackendUnderTest.RpcCount now, CpuClocks cpu) {
        ops += operations;
        if (System.nanoTime() >= nextCpuReadNanos) {
            CpuClocks.Reading reading = cpu.read();
            cpuOps = ops;
            taskJvmCpuNanos = reading.taskJvmNanos() - cpuStart.taskJvmNanos();
            stateProcessCpuNanos = reading.stateProcessNanos() - cpuStart.stateProcessNanos();
            nextCpuReadNanos = System.nanoTime() + CPU_READ_INTERVAL_MILLIS * 1_000_000;
        }
        if (now != null) {
            BackendUnderTest.RpcCount made = now.minus(iterationStart);
            readRpcs = made.reads();
            rpcs = made.all();
        }
    }
}
