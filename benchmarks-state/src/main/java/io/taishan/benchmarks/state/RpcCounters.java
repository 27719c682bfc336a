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

    @Nullable private BackendUnderTest.RpcCount iterationStart;

    @Setup(Level.Iteration)
    public void reset() {
        ops = 0;
        readRpcs = 0;
        rpcs = 0;
        iterationStart = null;
    }

    boolean started() {
        return ops > 0 || iterationStart != null;
    }

    void start(@Nullable BackendUnderTest.RpcCount now) {
        iterationStart = now;
        if (now == null) {
            // No server: nothing to read again this iteration.
            iterationStart = new BackendUnderTest.RpcCount(0, 0);
        }
    }

    void add(int operations, @Nullable BackendUnderTest.RpcCount now) {
        ops += operations;
        if (now != null) {
            BackendUnderTest.RpcCount made = now.minus(iterationStart);
            readRpcs = made.reads();
            rpcs = made.all();
        }
    }
}
