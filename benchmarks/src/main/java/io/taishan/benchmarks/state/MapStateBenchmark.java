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
 * asks for {@code userKey << 1} (half of those are absent), {@code mapIterator} reads whole maps
 * and counts one operation per entry.
 */
public class MapStateBenchmark extends StateBenchmarkBase {
    private static final String STATE_NAME = "mapState";

    private MapState<Long, Double> mapState;

    @Setup
    public void setUp() throws Exception {
        createBackend();
        long start = System.nanoTime();
        mapState = state(new MapStateDescriptor<>(STATE_NAME, Long.class, Double.class));
        for (int i = 0; i < setupKeyCount; i++) {
            keyedStateBackend.setCurrentKey((long) i);
            for (int j = 0; j < BenchmarkKeys.MAP_KEY_COUNT; j++) {
                mapState.put(keys.mapKey(j), keys.mapValue(i + j));
            }
        }
        expectKeys(STATE_NAME, setupKeyCount);
        report(
                "loaded " + setupKeyCount + " maps of " + BenchmarkKeys.MAP_KEY_COUNT + " entries",
                start);
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void mapUpdate() throws Exception {
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.setupKey(i));
            mapState.put(keys.mapKey(i), keys.mapValue(i));
        }
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void mapAdd() throws Exception {
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.newKey(i));
            mapState.put(keys.mapKey(i), keys.mapValue(i));
        }
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void mapGet(Blackhole bh) throws Exception {
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
    }

    @Benchmark
    @OperationsPerInvocation(OPS_PER_INVOCATION)
    public void mapContains(Blackhole bh) throws Exception {
        for (int op = 0; op < OPS_PER_INVOCATION; op++) {
            int i = next();
            keyedStateBackend.setCurrentKey(keys.setupKey(i));
            bh.consume(mapState.contains(keys.mapKey(i) << 1));
        }
    }

    private static final int MAPS_PER_INVOCATION = 10;

    /** Operations per invocation of {@link #mapIterator}: every entry of its maps. */
    private static final int ENTRIES_PER_INVOCATION =
            MAPS_PER_INVOCATION * BenchmarkKeys.MAP_KEY_COUNT;

    @Benchmark
    @OperationsPerInvocation(ENTRIES_PER_INVOCATION)
    public void mapIterator(Blackhole bh) throws Exception {
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
    }
}
