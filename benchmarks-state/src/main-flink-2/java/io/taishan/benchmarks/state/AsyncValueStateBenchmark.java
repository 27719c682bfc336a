package io.taishan.benchmarks.state;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * {@link ValueStateBenchmark}'s reads through Flink 2's asynchronous State V2 API, as an operator
 * with asynchronous state makes them: each operation is one record whose {@code asyncValue()}
 * future's callback consumes the value; Flink's execution controller gathers the requests of the
 * records in flight into batches and hands each to the backend's executor ({@link
 * AsyncStateDriver}). A backend with an asynchronous keyed backend of its own (Taishan, ForSt)
 * serves the batches itself; for the others Flink's adaptor runs each request on the synchronous
 * state, one at a time, on the task thread, which is what their users get from an async operator.
 *
 * <p>An invocation is {@value #RECORDS_PER_INVOCATION} records followed by a drain, so every
 * counted read has completed and its callback run; the drain costs one batch's latency per
 * invocation, where a job pays it only at a checkpoint barrier.
 */
public class AsyncValueStateBenchmark extends StateBenchmarkBase {
    static final int RECORDS_PER_INVOCATION = 10_000;

    private AsyncStateDriver driver;
    private ValueState<Long> valueState;
    private final AtomicLong firstMissing = new AtomicLong(-1);

    @Override
    StateSize stateSize() {
        return StateSize.VALUE;
    }

    @Setup
    public void setUp() throws Exception {
        BackendUnderTest underTest = openBackendUnderTest();
        driver =
                AsyncStateDriver.open(
                        underTest.stateBackend(),
                        keyedBackendParameters(List.of()),
                        NUMBER_OF_KEY_GROUPS);
        System.out.printf(
                "(%s) ",
                driver.adapted()
                        ? "Flink's adaptor over the synchronous keyed backend"
                        : "the backend's asynchronous keyed backend");
        long start = System.nanoTime();
        valueState =
                driver.backend.getOrCreateKeyedState(
                        VoidNamespace.INSTANCE,
                        VoidNamespaceSerializer.INSTANCE,
                        new ValueStateDescriptor<>(
                                ValueStateBenchmark.DESCRIPTOR.getName(), LongSerializer.INSTANCE));
        for (int i = 0; i < setupKeyCount; i++) {
            long value = keys.value(i);
            driver.record(keys.loadKey(i), () -> valueState.asyncUpdate(value));
        }
        driver.drain();
        // Every loaded key must read back before anything is measured.
        for (int i = 0; i < setupKeyCount; i++) {
            long key = keys.loadKey(i);
            driver.record(key, () -> valueState.asyncValue().thenAccept(v -> check(key, v)));
        }
        driver.drain();
        failIfMissing();
        // The loaded state leaves the task's write buffers (Taishan's queue, ForSt's memtable),
        // as it would have in a job by the time it is read back at random.
        checkpoint(driver.backend, 1);
        if (driver.synchronousBackend() != null) {
            underTest.loaded(driver.synchronousBackend(), ValueStateBenchmark.DESCRIPTOR);
        }
        report("loaded and read back " + setupKeyCount + " keys", start);
    }

    private void check(long key, Long value) {
        if (value == null) {
            firstMissing.compareAndSet(-1, key);
        }
    }

    private void failIfMissing() {
        if (firstMissing.get() != -1) {
            throw missing("value", firstMissing.get());
        }
    }

    @Benchmark
    @OperationsPerInvocation(RECORDS_PER_INVOCATION)
    public void asyncValueGet(RpcCounters counters, Blackhole bh) {
        begin(counters);
        for (int op = 0; op < RECORDS_PER_INVOCATION; op++) {
            long key = keys.setupKey(next());
            driver.record(
                    key,
                    () ->
                            valueState
                                    .asyncValue()
                                    .thenAccept(
                                            v -> {
                                                check(key, v);
                                                bh.consume(v);
                                            }));
        }
        driver.drain();
        failIfMissing();
        counted(counters, RECORDS_PER_INVOCATION);
    }

    @Override
    void closeOwnKeyedBackend() throws Exception {
        if (driver != null) {
            driver.close();
            closeCancelStreamRegistry();
            driver = null;
        }
    }
}
