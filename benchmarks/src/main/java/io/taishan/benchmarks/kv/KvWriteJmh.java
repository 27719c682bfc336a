package io.taishan.benchmarks.kv;

import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.WriteBatch;
import io.taishan.kv.client.WriteResult;
import java.io.IOException;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * JMH cross-check of the write figures of {@link KvServiceBenchmark}: one {@code Write} RPC of
 * {@code batchSize} puts (16 B keys, 100 B values) per invocation, one caller. The primary score is
 * Write calls per second; the {@code puts} counter is puts per second.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xmx1g", "-XX:+UseG1GC"})
public class KvWriteJmh {
    private static final long KEY_SPACE = 1L << 24;

    @Param({"1", "100", "1000"})
    public int batchSize;

    private JmhKvServer server;
    private ShardLease lease;
    private final SplittableRandom random = new SplittableRandom(11);
    private final byte[][] values = new byte[256][];

    /** Puts done, reported by JMH as a rate beside the primary score. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class PutCounter {
        public long puts;

        @Setup(Level.Iteration)
        public void reset() {
            puts = 0;
        }
    }

    @Setup
    public void setUp() throws IOException {
        server = JmhKvServer.start();
        lease = server.newShard("jmh_write_" + batchSize);
        for (int i = 0; i < values.length; i++) {
            values[i] = BenchKeys.randomValue(random, WriteBenchmark.VALUE_BYTES);
        }
    }

    @TearDown
    public void tearDown() throws IOException {
        server.close();
    }

    @Benchmark
    public WriteResult write(PutCounter counter) {
        WriteBatch batch = new WriteBatch(lease.table());
        for (int i = 0; i < batchSize; i++) {
            batch.put(
                    lease,
                    BenchKeys.key(random.nextLong(KEY_SPACE)),
                    values[random.nextInt(values.length)]);
        }
        WriteResult result = server.store().write(batch);
        counter.puts += batchSize;
        return result;
    }
}
