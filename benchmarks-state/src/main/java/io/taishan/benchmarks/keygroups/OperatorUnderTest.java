package io.taishan.benchmarks.keygroups;

import io.taishan.benchmarks.state.BackendUnderTest;
import io.taishan.benchmarks.state.BenchmarkTaskEnvironment;
import io.taishan.benchmarks.state.CapturingMetricGroup;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.RunnableFuture;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.state.InternalCheckpointListener;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.IOUtils;

/**
 * One keyed operator at one parallelism on one backend: a keyed backend per subtask, each owning
 * the key groups Flink assigns to it ({@link KeyGroupRangeAssignment}), made through {@code
 * StateBackend#createKeyedStateBackend} as a task makes it, and driven on a thread per subtask at
 * once, as parallel tasks would drive them. A step's time is until the last subtask finished it.
 */
public final class OperatorUnderTest {
    private final List<Subtask> subtasks = new ArrayList<>();
    private final ExecutorService threads;

    /** The subtasks' keyed backends are not open yet: see {@link #open}. */
    public OperatorUnderTest(
            BackendUnderTest backend,
            Path workDir,
            JobID jobId,
            OperatorID operatorId,
            int maxParallelism,
            int parallelism,
            ScalingData data,
            ExecutorService threads) {
        this.threads = threads;
        for (int i = 0; i < parallelism; i++) {
            KeyGroupRange range =
                    KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                            maxParallelism, parallelism, i);
            subtasks.add(
                    new Subtask(
                            backend,
                            workDir,
                            jobId,
                            // The form a task gives; Taishan names its table by the OperatorID.
                            "KeyGroupScaling_"
                                    + operatorId
                                    + "_("
                                    + (i + 1)
                                    + "/"
                                    + parallelism
                                    + ")",
                            maxParallelism,
                            range,
                            data.keysIn(range, maxParallelism),
                            data));
        }
    }

    int parallelism() {
        return subtasks.size();
    }

    /**
     * Every subtask's keyed backend, made from the handles that intersect its key groups (none: a
     * new operator), then made ready: the two states registered and one key written and read back
     * (new), or one key read and checked (restored, {@code afterChange}: which version).
     *
     * @return the nanoseconds until the slowest subtask's {@code createKeyedStateBackend} returned
     */
    long open(Collection<KeyedStateHandle> restoreFrom, boolean afterChange) throws Exception {
        return open(restoreFrom, afterChange ? 1 : 0);
    }

    /** As {@link #open(Collection, boolean)}, restored after {@code rounds} change rounds. */
    public long open(Collection<KeyedStateHandle> restoreFrom, int rounds) throws Exception {
        long start = System.nanoTime();
        List<Long> created =
                onAll(
                        subtask ->
                                () -> {
                                    subtask.create(restoreFrom);
                                    long at = System.nanoTime() - start;
                                    subtask.ready(!restoreFrom.isEmpty(), rounds);
                                    return at;
                                });
        return created.stream().mapToLong(Long::longValue).max().orElse(0);
    }

    /** Every key of the data set into the subtask that owns it: value and map. */
    public void load() throws Exception {
        onAll(
                subtask ->
                        () -> {
                            subtask.load();
                            return null;
                        });
    }

    /** The change set: each changed key's value and first map entry to version 1. */
    void change() throws Exception {
        change(0);
    }

    /** Change round {@code round} (from 0): its keys' value and first map entry to version 1. */
    public void change(int round) throws Exception {
        onAll(
                subtask ->
                        () -> {
                            subtask.change(round);
                            return null;
                        });
    }

    /**
     * A checkpoint of every subtask, as a task takes one: {@code snapshot(...)}, then the returned
     * future run to completion and its result taken.
     *
     * @return the subtasks' handles (as the JobManager receives them) and the slowest subtask's
     *     synchronous part in nanoseconds
     */
    public Checkpoint checkpoint(
            long checkpointId, CheckpointStreamFactory streams, CheckpointOptions options)
            throws Exception {
        long start = System.nanoTime();
        List<Object[]> results =
                onAll(
                        subtask ->
                                () -> {
                                    RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot =
                                            subtask.backend.snapshot(
                                                    checkpointId,
                                                    System.currentTimeMillis(),
                                                    streams,
                                                    options);
                                    long sync = System.nanoTime() - start;
                                    snapshot.run();
                                    KeyedStateHandle handle =
                                            snapshot.get().getJobManagerOwnedSnapshot();
                                    return new Object[] {handle, sync};
                                });
        List<KeyedStateHandle> handles = new ArrayList<>();
        long sync = 0;
        for (Object[] result : results) {
            if (result[0] != null) {
                handles.add((KeyedStateHandle) result[0]);
            }
            sync = Math.max(sync, (Long) result[1]);
        }
        return new Checkpoint(checkpointId, handles, sync);
    }

    /**
     * What the subtasks hear once the checkpoint is complete, and which earlier one it subsumed.
     */
    public void notifyComplete(long checkpointId, long subsumed) throws Exception {
        onAll(
                subtask ->
                        () -> {
                            // As Flink's StreamOperatorStateHandler: only a listener is told.
                            if (subtask.backend instanceof CheckpointListener listener) {
                                listener.notifyCheckpointComplete(checkpointId);
                                if (subsumed > 0
                                        && listener
                                                instanceof InternalCheckpointListener internal) {
                                    internal.notifyCheckpointSubsumed(subsumed);
                                }
                            }
                            return null;
                        });
    }

    /** Checks every key of {@code sample} that a subtask owns; returns how many were checked. */
    int verify(long[] sample, boolean afterChange) throws Exception {
        return verify(sample, afterChange ? 1 : 0);
    }

    /** As {@link #verify(long[], boolean)}, after {@code rounds} change rounds. */
    public int verify(long[] sample, int rounds) throws Exception {
        return onAll(subtask -> () -> subtask.verify(sample, rounds)).stream()
                .mapToInt(Integer::intValue)
                .sum();
    }

    /** The server calls of all subtasks so far, by kind. */
    public Map<String, Long> rpcs(BackendUnderTest backend) {
        Map<String, Long> sum = new TreeMap<>();
        for (Subtask subtask : subtasks) {
            if (subtask.metrics != null) {
                backend.rpcsByKind(subtask.metrics).forEach((k, v) -> sum.merge(k, v, Long::sum));
            }
        }
        return sum;
    }

    /**
     * The sum over the subtasks of the numeric gauge named {@code name} (a dotted name relative to
     * the operator, as {@code taishan.restoreDownloadedBytes}); -1 when no subtask registered it.
     */
    public long gauge(String name) {
        long sum = -1;
        for (Subtask subtask : subtasks) {
            if (subtask.metrics != null
                    && subtask.metrics.metrics().get(name) instanceof Gauge<?> gauge
                    && gauge.getValue() instanceof Number value) {
                sum = Math.max(sum, 0) + value.longValue();
            }
        }
        return sum;
    }

    /** Disposes and closes every subtask's keyed backend, as a cancelled or failed task does. */
    public void dispose() throws Exception {
        onAll(
                subtask ->
                        () -> {
                            subtask.dispose();
                            return null;
                        });
    }

    /** A completed checkpoint: what the JobManager holds of it. */
    public record Checkpoint(long id, List<KeyedStateHandle> handles, long syncNanos) {}

    private interface Step<T> {
        Callable<T> on(Subtask subtask);
    }

    /** Runs {@code step} on every subtask at once; the first failure fails the whole step. */
    private <T> List<T> onAll(Step<T> step) throws Exception {
        List<Future<T>> futures = new ArrayList<>();
        for (Subtask subtask : subtasks) {
            futures.add(threads.submit(step.on(subtask)));
        }
        List<T> results = new ArrayList<>();
        try {
            for (Future<T> future : futures) {
                results.add(future.get());
            }
        } catch (ExecutionException e) {
            futures.forEach(f -> f.cancel(true));
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        } catch (InterruptedException e) {
            futures.forEach(f -> f.cancel(true));
            throw e;
        }
        return results;
    }

    /** One subtask: its key groups, the data set's keys in them, and its keyed backend. */
    private static final class Subtask {
        private final BackendUnderTest backend0;
        private final Path workDir;
        private final JobID jobId;
        private final String operatorIdentifier;
        private final int maxParallelism;
        private final KeyGroupRange range;
        private final long[] keys;
        private final ScalingData data;

        private CapturingMetricGroup metrics;
        private CloseableRegistry cancelStreamRegistry;
        private CheckpointableKeyedStateBackend<Long> backend;
        private ValueState<byte[]> value;
        private MapState<Long, Long> map;

        Subtask(
                BackendUnderTest backend,
                Path workDir,
                JobID jobId,
                String operatorIdentifier,
                int maxParallelism,
                KeyGroupRange range,
                long[] keys,
                ScalingData data) {
            this.backend0 = backend;
            this.workDir = workDir;
            this.jobId = jobId;
            this.operatorIdentifier = operatorIdentifier;
            this.maxParallelism = maxParallelism;
            this.range = range;
            this.keys = keys;
            this.data = data;
        }

        void create(Collection<KeyedStateHandle> restoreFrom) throws Exception {
            // As Flink's StateAssignmentOperation: each handle cut to this subtask's key groups.
            List<KeyedStateHandle> mine =
                    restoreFrom.stream()
                            .map(handle -> handle.getIntersection(range))
                            .filter(Objects::nonNull)
                            .toList();
            metrics = new CapturingMetricGroup();
            cancelStreamRegistry = new CloseableRegistry();
            backend =
                    backend0.stateBackend()
                            .createKeyedStateBackend(
                                    new KeyedStateBackendParametersImpl<>(
                                            BenchmarkTaskEnvironment.create(
                                                    jobId,
                                                    workDir.toFile(),
                                                    backend0.environment()),
                                            jobId,
                                            operatorIdentifier,
                                            LongSerializer.INSTANCE,
                                            maxParallelism,
                                            range,
                                            null,
                                            TtlTimeProvider.DEFAULT,
                                            metrics,
                                            mine,
                                            cancelStreamRegistry));
        }

        void ready(boolean restored, int rounds) throws Exception {
            value =
                    backend.getPartitionedState(
                            VoidNamespace.INSTANCE,
                            VoidNamespaceSerializer.INSTANCE,
                            ScalingData.VALUE);
            map =
                    backend.getPartitionedState(
                            VoidNamespace.INSTANCE,
                            VoidNamespaceSerializer.INSTANCE,
                            ScalingData.MAP);
            if (keys.length == 0) {
                return;
            }
            long key = keys[0];
            backend.setCurrentKey(key);
            if (restored) {
                check(key, rounds, false);
            } else {
                value.update(data.value(key, 0));
                map.put(0L, data.mapValue(key, 0, 0));
                if (!Arrays.equals(value.value(), data.value(key, 0))) {
                    throw new IllegalStateException("key " + key + ": written value not read back");
                }
            }
        }

        public void load() throws Exception {
            for (long key : keys) {
                backend.setCurrentKey(key);
                value.update(data.value(key, 0));
                for (int entry = 0; entry < data.mapEntries; entry++) {
                    map.put((long) entry, data.mapValue(key, entry, 0));
                }
            }
        }

        void change(int round) throws Exception {
            for (long key : data.changedKeys(round)) {
                if (range.contains(KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism))) {
                    backend.setCurrentKey(key);
                    value.update(data.value(key, 1));
                    map.put(0L, data.mapValue(key, 0, 1));
                }
            }
        }

        int verify(long[] sample, int rounds) throws Exception {
            int checked = 0;
            for (long key : sample) {
                if (range.contains(KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism))) {
                    backend.setCurrentKey(key);
                    check(key, rounds, true);
                    checked++;
                }
            }
            return checked;
        }

        private void check(long key, int rounds, boolean wholeMap) throws Exception {
            int version = data.version(key, rounds);
            if (!Arrays.equals(value.value(), data.value(key, version))) {
                throw new IllegalStateException(
                        "restored key " + key + ": value is not version " + version);
            }
            int entries = wholeMap ? data.mapEntries : 1;
            for (int entry = 0; entry < entries; entry++) {
                Long found = map.get((long) entry);
                if (found == null || found != data.mapValue(key, entry, version)) {
                    throw new IllegalStateException(
                            "restored key "
                                    + key
                                    + ": map entry "
                                    + entry
                                    + " is "
                                    + found
                                    + ", expected version "
                                    + version);
                }
            }
        }

        void dispose() {
            if (backend != null) {
                backend.dispose();
                IOUtils.closeQuietly(backend);
                IOUtils.closeQuietly(cancelStreamRegistry);
                backend = null;
            }
        }
    }
}
