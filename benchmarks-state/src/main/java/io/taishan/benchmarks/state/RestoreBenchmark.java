package io.taishan.benchmarks.state;

import java.util.List;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Absent keys looked up right after a restore: the trial loads value state, checkpoints it and
 * closes the backend; every iteration restores a fresh keyed backend from that checkpoint (the same
 * job and operator, as after a failover) and then looks up {@value #LOOKUPS} keys that were never
 * written. The score is the time per lookup; {@link RpcCounters#readRpcs} over {@link
 * RpcCounters#ops} is the share of those lookups that reached the server. Without a Bloom filter
 * that share is 1; a filter that is loaded when the restore returns brings it near 0.
 */
@BenchmarkMode(Mode.SingleShotTime)
@Warmup(iterations = 1)
@Measurement(iterations = 5)
public class RestoreBenchmark extends StateBenchmarkBase {
    static final int LOOKUPS = 5_000;

    private KeyedStateHandle checkpoint;
    private ValueState<Long> valueState;

    @Override
    StateSize stateSize() {
        return StateSize.VALUE;
    }

    @Setup
    public void setUp() throws Exception {
        createBackend();
        long start = System.nanoTime();
        ValueState<Long> loading = state(ValueStateBenchmark.DESCRIPTOR);
        for (int i = 0; i < setupKeyCount; i++) {
            keyedStateBackend.setCurrentKey(keys.loadKey(i));
            loading.update(keys.value(i));
        }
        expectLoaded(ValueStateBenchmark.DESCRIPTOR, setupKeyCount);
        report("loaded " + setupKeyCount + " keys", start);
        start = System.nanoTime();
        checkpoint = checkpoint(1);
        report("checkpointed", start);
        disposeKeyedBackend();
    }

    @Override
    void beforeIteration() throws Exception {
        long start = System.nanoTime();
        openKeyedBackend(List.of(checkpoint));
        valueState = state(ValueStateBenchmark.DESCRIPTOR);
        report("restored", start);
    }

    @Override
    void afterIteration() {
        disposeKeyedBackend();
    }

    @Benchmark
    @OperationsPerInvocation(LOOKUPS)
    public void absentLookupsAfterRestore(RpcCounters counters) throws Exception {
        begin(counters);
        for (int op = 0; op < LOOKUPS; op++) {
            long key = keys.newKey(next());
            keyedStateBackend.setCurrentKey(key);
            if (valueState.value() != null) {
                throw new IllegalStateException("key " + key + " was never written");
            }
        }
        counted(counters, LOOKUPS);
    }
}
