package io.taishan.benchmarks.state;

import java.util.List;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Blackhole;

/**
 * {@code ListState<Long>}: Flink's {@code ListStateBenchmark}. Every iteration starts from one
 * element per loaded key and clears the state afterwards, so appended lists do not grow from
 * iteration to iteration. {@code listAppend} is {@code add} of one element to a loaded key (a blind
 * server-side append in Taishan), {@code listAdd} is Flink's name for {@code update} of a key that
 * was not loaded with a one-element list, {@code listGet} reads a loaded key's list.
 */
public class ListStateBenchmark extends StateBenchmarkBase {
    private static final String STATE_NAME = "listState";
    private static final ListStateDescriptor<Long> DESCRIPTOR =
            new ListStateDescriptor<>(STATE_NAME, Long.class);

    private ListState<Long> listState;

    @Setup
    public void setUp() throws Exception {
        createBackend();
        listState = state(DESCRIPTOR);
    }

    @Setup(Level.Iteration)
    public void setUpPerIteration() throws Exception {
        long start = System.nanoTime();
        for (int i = 0; i < setupKeyCount; i++) {
            keyedStateBackend.setCurrentKey((long) i);
            listState.add(keys.value(i));
        }
        expectKeys(STATE_NAME, setupKeyCount);
        report("loaded " + setupKeyCount + " lists", start);
    }

    @TearDown(Level.Iteration)
    public void tearDownPerIteration() throws Exception {
        long start = System.nanoTime();
        keyedStateBackend.applyToAllKeys(
                VoidNamespace.INSTANCE,
                VoidNamespaceSerializer.INSTANCE,
                DESCRIPTOR,
                (key, state) -> {
                    keyedStateBackend.setCurrentKey(key);
                    state.clear();
                });
        expectKeys(STATE_NAME, 0);
        report("cleared", start);
        // Flink's benchmark also collects the heap's garbage here (and sleeps 1 s for RocksDB).
        System.gc();
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void listAppend() throws Exception {
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.setupKey(i));
            listState.add(keys.value(i));
        }
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void listAdd() throws Exception {
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.newKey(i));
            listState.update(List.of(keys.value(i)));
        }
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void listGet(Blackhole bh) throws Exception {
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            long key = keys.setupKey(next());
            keyedStateBackend.setCurrentKey(key);
            Iterable<Long> list = listState.get();
            if (list == null) {
                throw missing("list", key);
            }
            bh.consume(list);
        }
    }
}
