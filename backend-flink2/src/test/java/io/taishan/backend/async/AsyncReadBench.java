package io.taishan.backend.async;

import io.taishan.backend.TaishanKeyedStateBackend;
import io.taishan.backend.TaishanOptions;
import io.taishan.backend.read.ReadMetrics;
import io.taishan.kv.server.EmbeddedKvServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.LongAdder;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;

/**
 * A harness, not a test: random point reads of a value state whose read cache holds a tenth of the
 * state, through the synchronous path (one {@code Get} per miss, what Flink's adaptor does for
 * asynchronous operators too) and through the asynchronous backend (Flink's execution controller,
 * batches of 1000 requests, one {@code MultiGet} per batch), alternately, in one JVM with an
 * in-process kv-server. Prints reads per second and the remote calls behind them.
 *
 * <p>{@code mvn -q -pl backend-flink2 exec:java -Dexec.classpathScope=test
 * -Dexec.mainClass=io.taishan.backend.async.AsyncReadBench [-Dexec.args="keys reads rounds"]}
 */
public final class AsyncReadBench {
    private static final int VALUE_BYTES = 100;

    public static void main(String[] args) throws Exception {
        int keys = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        int reads = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        // Key, value and the cache's own bytes per entry, about 200: a tenth of the state.
        long cacheBytes = Math.max(1 << 20, keys * 200L / 10);
        System.out.printf(
                "keys %,d, values of %d bytes, cache %s, %,d random reads per run%n",
                keys, VALUE_BYTES, new MemorySize(cacheBytes).toHumanReadableString(), reads);
        try (EmbeddedKvServer server = EmbeddedKvServer.start();
                MockEnvironment env = MockEnvironment.builder().build()) {
            Configuration config = new Configuration();
            config.set(TaishanOptions.KV_ADDRESS, server.address());
            config.set(TaishanOptions.CACHE_TYPE, "off-heap");
            config.set(TaishanOptions.CACHE_SIZE, new MemorySize(cacheBytes));
            try (AsyncOperatorRig rig =
                    new AsyncOperatorRig(env, new JobID(), 128, config, 1000, List.of())) {
                ValueStateDescriptor<byte[]> descriptor =
                        new ValueStateDescriptor<>("v", BytePrimitiveArraySerializer.INSTANCE);
                ValueState<byte[]> async = rig.state(descriptor);
                Random random = new Random(7);
                for (long key = 0; key < keys; key++) {
                    byte[] value = new byte[VALUE_BYTES];
                    random.nextBytes(value);
                    rig.record(key, () -> async.asyncUpdate(value));
                }
                rig.checkpoint(1); // every write on the server
                TaishanKeyedStateBackend<Long> backend =
                        ((TaishanAsyncKeyedStateBackend<Long>) rig.backend).syncBackend();
                org.apache.flink.api.common.state.ValueState<byte[]> sync =
                        backend.getPartitionedState(
                                VoidNamespace.INSTANCE,
                                VoidNamespaceSerializer.INSTANCE,
                                new org.apache.flink.api.common.state.ValueStateDescriptor<>(
                                        "v", BytePrimitiveArraySerializer.INSTANCE));
                ReadMetrics metrics = rig.readMetrics();
                for (int round = 0; round <= rounds; round++) {
                    String label = round == 0 ? "warm-up" : "run " + round;
                    long[] before = counters(metrics);
                    long start = System.nanoTime();
                    long found = 0;
                    for (int i = 0; i < reads; i++) {
                        backend.setCurrentKey((long) random.nextInt(keys));
                        found += sync.value() == null ? 0 : 1;
                    }
                    report(label, "synchronous ", reads, found, start, before, metrics);

                    before = counters(metrics);
                    start = System.nanoTime();
                    LongAdder seen = new LongAdder();
                    for (int i = 0; i < reads; i++) {
                        rig.record(
                                random.nextInt(keys),
                                () ->
                                        async.asyncValue()
                                                .thenAccept(
                                                        v -> {
                                                            if (v != null) {
                                                                seen.increment();
                                                            }
                                                        }));
                    }
                    rig.drain();
                    report(label, "asynchronous", reads, seen.sum(), start, before, metrics);
                }
            }
        }
        System.out.println("load average: " + Files.readString(Path.of("/proc/loadavg")).trim());
    }

    private static long[] counters(ReadMetrics m) {
        return new long[] {m.cacheHits(), m.remoteGets(), m.batchedFetches(), m.batchedGets()};
    }

    private static void report(
            String round,
            String path,
            int reads,
            long found,
            long start,
            long[] before,
            ReadMetrics metrics) {
        double seconds = (System.nanoTime() - start) / 1e9;
        long[] after = counters(metrics);
        System.out.printf(
                "%-8s %s %,10.0f reads/s  found %,d  cache hits %,d  Gets %,d  MultiGets %,d"
                        + " (%,d keys)%n",
                round,
                path,
                reads / seconds,
                found,
                after[0] - before[0],
                after[1] - before[1],
                after[2] - before[2],
                after[3] - before[3]);
    }
}
