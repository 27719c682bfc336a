package io.taishan.benchmarks.state;

import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The method of Flink's own state benchmarks ({@code org.apache.flink.state.benchmark} in
 * flink-benchmarks): one thread on a {@code Long}-keyed backend, {@link VoidNamespace}, keys loaded
 * before the measurement, throughput in operations per millisecond, each backend of {@link
 * BackendKind} in the same run.
 *
 * <p>One deliberate difference: Flink picks each operation's key in a {@code Level.Invocation}
 * setup, which times every single call; JMH warns that this distorts calls well under a
 * millisecond, and it would tax the HashMap baseline most. Here one invocation performs {@value
 * #OPS_PER_INVOCATION} operations over the same pre-shuffled keys, declared with
 * {@code @OperationsPerInvocation}, so the score is still operations per millisecond.
 *
 * <p>Bounded in time for a 2-core machine: one fork per benchmark and backend, 10 warm-up and 5
 * measured iterations of 1 s (Flink runs 3 forks of 10 + 10 iterations of 10 s). Ten seconds of
 * warm-up is what a remote read needs here before two JVMs (the task's and the kv-server's) have
 * compiled the RPC path; with 3 s the Taishan reads were still climbing ten-fold.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "-Xms2g",
            "-Xmx2g",
            "-XX:+UseG1GC",
            // Flink's Java 17 list (flink-dist); the serializers here do not need it, Flink may.
            "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/java.util=ALL-UNNAMED",
            "--add-opens=java.base/java.io=ALL-UNNAMED",
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
            "--add-opens=java.base/java.net=ALL-UNNAMED",
            "--add-opens=java.base/java.text=ALL-UNNAMED",
            "--add-opens=java.base/java.time=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED"
        })
@Warmup(iterations = 10, time = 1)
@Measurement(iterations = 5, time = 1)
public abstract class StateBenchmarkBase {
    /** Operations per benchmark invocation; every score is per operation. */
    public static final int OPS_PER_INVOCATION = 100;

    @Param({"HASHMAP", "TAISHAN"})
    public BackendKind backend;

    /** Keys loaded before measuring (Flink's {@code SETUP_KEY_COUNT} is 500,000). */
    @Param({"100000"})
    public int setupKeyCount;

    BenchmarkKeys keys;
    KeyedStateBackend<Long> keyedStateBackend;
    private BenchmarkKeyedBackend underTest;

    /** Where the next operation takes its key and value in {@link #keys}. */
    private int cursor;

    /** Called first by each subclass's trial setup. */
    final void createBackend() throws Exception {
        keys = new BenchmarkKeys(setupKeyCount);
        underTest = BenchmarkKeyedBackend.create(backend);
        keyedStateBackend = underTest.backend();
        cursor = 0;
    }

    @TearDown
    public void tearDown() throws Exception {
        if (underTest != null) {
            underTest.close();
            underTest = null;
        }
    }

    /** Reported in the JMH log: the setup is outside the measurement but inside the run time. */
    final void report(String what, long startNanos) {
        System.out.printf(
                "(%s: %s in %.1f s) ", backend, what, (System.nanoTime() - startNanos) / 1e9);
    }

    final int next() {
        int index = cursor++;
        if (cursor == Integer.MAX_VALUE) {
            cursor = 0;
        }
        return index;
    }

    final <S extends org.apache.flink.api.common.state.State, T> S state(
            StateDescriptor<S, T> descriptor) throws Exception {
        return keyedStateBackend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
    }

    /**
     * Fails unless the state holds exactly {@code expected} keys. Taishan applies every queued
     * write before it lists keys, so the loaded state is then in the store and the measured reads
     * go there: the counterpart of the compaction that Flink's benchmarks run on RocksDB here.
     */
    final void expectKeys(String stateName, long expected) {
        long found;
        try (Stream<Long> stored = keyedStateBackend.getKeys(stateName, VoidNamespace.INSTANCE)) {
            found = stored.count();
        }
        if (found != expected) {
            throw new IllegalStateException(
                    backend
                            + ": state '"
                            + stateName
                            + "' holds "
                            + found
                            + " keys, expected "
                            + expected);
        }
    }

    static IllegalStateException missing(String what, long key) {
        return new IllegalStateException("no " + what + " for pre-loaded key " + key);
    }
}
