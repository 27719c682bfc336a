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
    private static final String STATE_NAME = "kvState";

    private ValueState<Long> valueState;

    @Setup
    public void setUp() throws Exception {
        createBackend();
        long start = System.nanoTime();
        valueState = state(new ValueStateDescriptor<>(STATE_NAME, Long.class));
        for (int i = 0; i < setupKeyCount; i++) {
            keyedStateBackend.setCurrentKey((long) i);
            valueState.update(keys.value(i));
        }
        expectKeys(STATE_NAME, setupKeyCount);
        report("loaded " + setupKeyCount + " keys", start);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void valueUpdate() throws Exception {
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.setupKey(i));
            valueState.update(keys.value(i));
        }
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void valueAdd() throws Exception {
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.newKey(i));
            valueState.update(keys.value(i));
        }
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void valueGet(Blackhole bh) throws Exception {
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            long key = keys.setupKey(next());
            keyedStateBackend.setCurrentKey(key);
            Long value = valueState.value();
            if (value == null) {
                throw missing("value", key);
            }
            bh.consume(value);
        }
    }
}
