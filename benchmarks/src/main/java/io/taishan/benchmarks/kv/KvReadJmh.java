package io.taishan.benchmarks.kv;

import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * JMH cross-check of the read figures of {@link KvServiceBenchmark}: sampled latency of one {@code
 * Get} and of one {@code MultiGet} of 100 keys, one caller, on a warm shard whose keys are present.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xmx1g", "-XX:+UseG1GC"})
public class KvReadJmh {
    private static final int KEYS = 100_000;

    private JmhKvServer server;
    private ShardLease lease;
    private byte[][] keys;
    private final SplittableRandom random = new SplittableRandom(7);

    @Setup
    public void setUp() throws IOException {
        server = JmhKvServer.start();
        lease = server.newShard("jmh_read");
        SplittableRandom values = new SplittableRandom(1);
        keys = new byte[KEYS][];
        WriteBatch batch = new WriteBatch(lease.table());
        for (int i = 0; i < KEYS; i++) {
            keys[i] = BenchKeys.key(i);
            batch.put(lease, keys[i], BenchKeys.randomValue(values, ReadBenchmark.VALUE_BYTES));
            if (batch.opCount() == 1000) {
                server.store().write(batch);
                batch = new WriteBatch(lease.table());
            }
        }
    }

    @TearDown
    public void tearDown() throws IOException {
        server.close();
    }

    @Benchmark
    public byte[] get() {
        byte[] value = server.store().get(lease, keys[random.nextInt(KEYS)]);
        if (value == null) {
            throw new IllegalStateException("a loaded key is missing");
        }
        return value;
    }

    @Benchmark
    public List<byte[]> multiGet100() {
        List<byte[]> batch = new ArrayList<>(ReadBenchmark.MULTI_GET_KEYS);
        for (int i = 0; i < ReadBenchmark.MULTI_GET_KEYS; i++) {
            batch.add(keys[random.nextInt(KEYS)]);
        }
        return server.store().multiGet(lease, batch);
    }
}
