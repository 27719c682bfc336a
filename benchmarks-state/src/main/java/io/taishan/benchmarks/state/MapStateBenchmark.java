package io.taishan.benchmarks.state;

import java.util.Map;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * {@code MapState<Long, Double>}: Flink's {@code MapStateBenchmark}, every loaded key holding
 * {@value BenchmarkKeys#MAP_KEY_COUNT} entries. {@code mapUpdate} puts into a loaded map, {@code
 * mapAdd} into a map that was not loaded, {@code mapGet} reads a present entry, {@code mapContains}
 * asks a loaded map for a user key it does not hold (Flink asks for {@code userKey << 1}, half of
 * which are present; all absent is what a Bloom filter can answer), {@code mapIterator} reads whole
 * maps and counts one operation per entry.
 */
public class MapStateBenchmark extends StateBenchmarkBase {
    static final MapStateDescriptor<Long, Double> DESCRIPTOR =
            new MapStateDescriptor<>("mapState", Long.class, Double.class);

    private MapState<Long, Double> mapState;

    @Override
    StateSize stateSize() {
        return StateSize.MAP;
    }

    @Setup
    public void setUp() throws Exception {
        createBackend();
        long start = System.nanoTime();
        mapState = state(DESCRIPTOR);
        for (int i = 0; i < setupKeyCount; i++) {
            keyedStateBackend.setCurrentKey(keys.loadKey(i));
            for (int j = 0; j < BenchmarkKeys.MAP_KEY_COUNT; j++) {
                mapState.put(keys.mapKey(j), keys.mapValue(i + j));
            }
        }
        expectLoaded(DESCRIPTOR, setupKeyCount);
        report(
                "loaded " + setupKeyCount + " maps of " + BenchmarkKeys.MAP_KEY_COUNT + " entries",
                start);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void mapUpdate(RpcCounters counters) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.setupKey(i));
            mapState.put(keys.mapKey(i), keys.mapValue(i));
        }
        counted(counters, OPS_PER_INVOCATION);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void mapAdd(RpcCounters counters) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.newKey(i));
            mapState.put(keys.mapKey(i), keys.mapValue(i));
        }
        counted(counters, OPS_PER_INVOCATION);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void mapGet(RpcCounters counters, Blackhole bh) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            long key = keys.setupKey(i);
            keyedStateBackend.setCurrentKey(key);
            Double value = mapState.get(keys.mapKey(i));
            if (value == null) {
                throw missing("map entry", key);
            }
            bh.consume(value);
        }
        counted(counters, OPS_PER_INVOCATION);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void mapContains(RpcCounters counters) throws Exception {
        begin(counters);
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            long key = keys.setupKey(i);
            keyedStateBackend.setCurrentKey(key);
            if (mapState.contains(keys.absentMapKey(i))) {
                throw new IllegalStateException("the map of key " + key + " holds an absent key");
            }
        }
        counted(counters, OPS_PER_INVOCATION);
    }

    private static final int MAPS_PER_INVOCATION = 10;

    /** Operations per invocation of {@link #mapIterator}: every entry of its maps. */
    private static final int ENTRIES_PER_INVOCATION =
            MAPS_PER_INVOCATION * BenchmarkKeys.MAP_KEY_COUNT;

    @Benchmark
    @OperationsPerInvocation(ENTRIES_PER_INVOCATION)
    public void mapIterator(RpcCounters counters, Blackhole bh) throws Exception {
        begin(counters);
        for (int op = 0; op < MAPS_PER_INVOCATION; op++) {
            long key = keys.setupKey(next());
            keyedStateBackend.setCurrentKey(key);
            int entries = 0;
            for (Map.Entry<Long, Double> entry : mapState.entries()) {
                bh.consume(entry.getKey());
                bh.consume(entry.getValue());
                entries++;
            }
            if (entries != BenchmarkKeys.MAP_KEY_COUNT) {
                throw new IllegalStateException(
                        "map of key " + key + " has " + entries + " entries");
            }
        }
        counted(counters, ENTRIES_PER_INVOCATION);
    }
}
