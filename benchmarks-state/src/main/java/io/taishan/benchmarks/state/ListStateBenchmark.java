package io.taishan.benchmarks.state;

import java.util.List;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * {@code ListState<Long>}: Flink's {@code ListStateBenchmark}, one element per loaded key. {@code
 * listAppend} is {@code add} of one element to a loaded key (a blind server-side append in Taishan,
 * a merge in RocksDB), {@code listAdd} is Flink's name for {@code update} of a key that was not
 * loaded with a one-element list, {@code listGet} reads a loaded key's list.
 *
 * <p>Loaded once per trial, not per iteration as in Flink: reloading and clearing 500,000 remote
 * lists every second iteration would cost more than the measurement. Appended lists therefore grow
 * over a trial's 15 s, in {@code listAppend}'s own fork only; no other benchmark reads them.
 */
public class ListStateBenchmark extends StateBenchmarkBase {
    static final ListStateDescriptor<Long> DESCRIPTOR =
            new ListStateDescriptor<>("listState", Long.class);

    private ListState<Long> listState;

    @Override
    StateSize stateSize() {
        return StateSize.LIST;
    }

    @Setup
    public void setUp() throws Exception {
        createBackend();
        long start = System.nanoTime();
        listState = state(DESCRIPTOR);
        for (int i = 0; i < setupKeyCount; i++) {
            keyedStateBackend.setCurrentKey(keys.loadKey(i));
            listState.add(keys.value(i));
        }
        expectLoaded(DESCRIPTOR, setupKeyCount);
        report("loaded " + setupKeyCount + " lists", start);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void listAppend(RpcCounters counters) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.setupKey(i));
            listState.add(keys.value(i));
        }
        counted(counters, OPS_PER_INVOCATION);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void listAdd(RpcCounters counters) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.newKey(i));
            listState.update(List.of(keys.value(i)));
        }
        counted(counters, OPS_PER_INVOCATION);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void listGet(RpcCounters counters, Blackhole bh) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            long key = keys.setupKey(next());
            keyedStateBackend.setCurrentKey(key);
            Iterable<Long> list = listState.get();
            if (list == null) {
                throw missing("list", key);
            }
            bh.consume(list);
        }
        counted(counters, OPS_PER_INVOCATION);
    }
}
