package io.taishan.backend;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.RunnableFuture;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SnapshotType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PlaceholderStreamStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistryImpl;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;

/**
 * What the durable-checkpoint tests of one keyed backend share: the operator they play (one subtask
 * of 8 key groups, a {@code ValueState<Integer>} per {@code String} key), its snapshots as the
 * checkpoint coordinator takes them, and the JobManager's registration of their shared state.
 */
final class DurableBackends {
    static final int KEY_GROUPS = 8;
    static final KeyGroupRange ALL = KeyGroupRange.of(0, KEY_GROUPS - 1);
    static final String OPERATOR = "StreamMap_0a448493b4782967b150582570326227_(1/1)";
    static final ValueStateDescriptor<Integer> COUNT =
            new ValueStateDescriptor<>("count", IntSerializer.INSTANCE);

    private DurableBackends() {}

    /** The operator's keyed backend of {@code job} on {@code backend}, restored from handles. */
    static TaishanKeyedStateBackend<String> keyed(
            TaishanStateBackend backend,
            MockEnvironment env,
            JobID job,
            Collection<KeyedStateHandle> handles)
            throws Exception {
        return (TaishanKeyedStateBackend<String>)
                backend.createKeyedStateBackend(
                        new KeyedStateBackendParametersImpl<>(
                                env,
                                job,
                                OPERATOR,
                                StringSerializer.INSTANCE,
                                KEY_GROUPS,
                                ALL,
                                env.getTaskKvStateRegistry(),
                                TtlTimeProvider.DEFAULT,
                                new UnregisteredMetricsGroup(),
                                handles,
                                new CloseableRegistry()));
    }

    static KeyedStateHandle snapshot(
            TaishanKeyedStateBackend<String> backend,
            long checkpointId,
            CheckpointStreamFactory location,
            SnapshotType type)
            throws Exception {
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future =
                backend.snapshot(
                        checkpointId,
                        checkpointId,
                        location,
                        new CheckpointOptions(
                                type, CheckpointStorageLocationReference.getDefault()));
        future.run();
        return future.get().getJobManagerOwnedSnapshot();
    }

    /** As the JobManager does when the acknowledgement arrives: placeholders become the copies. */
    static KeyedStateHandle registered(
            SharedStateRegistryImpl registry, KeyedStateHandle handle, long checkpointId) {
        handle.registerSharedStates(registry, checkpointId);
        registry.checkpointCompleted(checkpointId);
        return handle;
    }

    /** The shared files a checkpoint did not upload but reused from an earlier one. */
    static List<PlaceholderStreamStateHandle> placeholders(
            IncrementalRemoteKeyedStateHandle handle) {
        List<PlaceholderStreamStateHandle> found = new ArrayList<>();
        for (HandleAndLocalPath copy : handle.getSharedState()) {
            if (copy.getHandle() instanceof PlaceholderStreamStateHandle placeholder) {
                found.add(placeholder);
            }
        }
        return found;
    }

    /** Keys {@code k<from>..}, each value its number plus {@code offset}. */
    static void write(TaishanKeyedStateBackend<String> backend, int from, int count, int offset)
            throws Exception {
        for (int i = from; i < from + count; i++) {
            backend.setCurrentKey("k" + i);
            state(backend).update(i + offset);
        }
    }

    static ValueState<Integer> state(TaishanKeyedStateBackend<String> backend) throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, COUNT);
    }

    static void deleteRecursively(Path root) throws Exception {
        try (var paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
