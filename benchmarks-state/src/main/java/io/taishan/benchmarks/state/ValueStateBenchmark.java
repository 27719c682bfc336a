package io.taishan.benchmarks.state;

import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * {@code ValueState<Long>}: Flink's {@code ValueStateBenchmark}. {@code valueUpdate} overwrites a
 * loaded key, {@code valueAdd} writes a key that was not loaded, {@code valueGet} reads a loaded
 * key.
 */
public class ValueStateBenchmark extends StateBenchmarkBase {
    static final ValueStateDescriptor<Long> DESCRIPTOR =
            new ValueStateDescriptor<>("kvState", Long.class);

    private ValueState<Long> valueState;

    @Override
    StateSize stateSize() {
        return StateSize.VALUE;
    }

    @Setup
    public void setUp() throws Exception {
        createBackend();
        long start = System.nanoTime();
        valueState = state(DESCRIPTOR);
        for (int i = 0; i < setupKeyCount; i++) {
            keyedStateBackend.setCurrentKey(keys.loadKey(i));
            valueState.update(keys.value(i));
        }
        expectLoaded(DESCRIPTOR, setupKeyCount);
        report("loaded " + setupKeyCount + " keys", start);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void valueUpdate(RpcCounters counters) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.setupKey(i));
            valueState.update(keys.value(i));
        }
        counted(counters, OPS_PER_INVOCATION);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void valueAdd(RpcCounters counters) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.newKey(i));
            valueState.update(keys.value(i));
        }
        counted(counters, OPS_PER_INVOCATION);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void valueGet(RpcCounters counters, Blackhole bh) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            long key = keys.setupKey(next());
            keyedStateBackend.setCurrentKey(key);
            Long value = valueState.value();
            if (value == null) {
                throw missing("value", key);
            }
            bh.consume(value);
        }
        counted(counters, OPS_PER_INVOCATION);
    }
}
