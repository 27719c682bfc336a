package io.taishan.benchmarks.state;

import java.util.Map;
import javax.annotation.Nullable;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.StateBackend;

/**
 * One benchmark trial's backend and whatever it runs on (a kv-server child JVM, an I/O manager),
 * closed with the trial. The suite makes every keyed backend from {@link #stateBackend()} through
 * {@code createKeyedStateBackend}, as a task does, also when it restores one (on Flink 2, for the
 * asynchronous benchmarks, through {@code createAsyncKeyedStateBackend} where the backend has one).
 */
public interface BackendUnderTest extends AutoCloseable {
    StateBackend stateBackend();

    /** For the JMH log: what runs, and how it was configured. */
    String description();

    /**
     * Answers that this backend needs from the task {@code Environment}, by method name, beyond the
     * ones every backend gets ({@link BenchmarkTaskEnvironment}).
     */
    default Map<String, Object> environment() {
        return Map.of();
    }

    /** Called once a state has been loaded, before the measurement (RocksDB compacts here). */
    default void loaded(KeyedStateBackend<Long> backend, StateDescriptor<?, ?> descriptor)
            throws Exception {}

    /**
     * The calls that a keyed backend has made to a server so far, read from the metrics it
     * registered in {@code metrics}; null for a backend without a server.
     */
    @Nullable
    default RpcCount rpcs(CapturingMetricGroup metrics) {
        return null;
    }

    /**
     * The calls that a keyed backend has made to a server so far, by kind as its metrics name them
     * ({@code get}, {@code write}, {@code open_shard}, ...), zero counts left out; empty for a
     * backend without a server. Read from the metrics it registered in {@code metrics}.
     */
    default Map<String, Long> rpcsByKind(CapturingMetricGroup metrics) {
        return Map.of();
    }

    /** Where the state lives: by default the task's JVM, with no files (a heap backend). */
    default StateHome stateHome() {
        return StateHome.taskJvm(null);
    }

    /**
     * Loses the node that holds the state, its disk included, and starts an empty one in its place
     * that the same {@link #stateBackend()} reaches: a restore after it has nothing local. Returns
     * false for a backend with no node of its own to lose (a task-local backend without local
     * recovery, such as Flink's RocksDB here, has nothing local at any restore).
     */
    default boolean loseNode() throws Exception {
        return false;
    }

    @Override
    void close() throws Exception;

    /** Server calls so far: the reads among them, and all of them. */
    record RpcCount(long reads, long all) {
        RpcCount minus(RpcCount earlier) {
            return new RpcCount(reads - earlier.reads, all - earlier.all);
        }
    }
}
