package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.client.FencedException;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.server.EmbeddedKvServer;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.RunnableFuture;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SavepointKeyedStateHandle;
import org.apache.flink.runtime.state.SavepointResources;
import org.apache.flink.runtime.state.SavepointSnapshotStrategy;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.SnapshotStrategyRunner;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.util.ExceptionUtils;
import org.apache.flink.util.StateMigrationException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What Flink's suite cannot see: a restore within the same job (same table) rolls shards back and
 * fences the old attempt, a new attempt without a checkpoint starts empty, remote snapshots are
 * released by watermark (sparing pinned ones), and configuration opens no connection.
 */
class TaishanKeyedStateBackendTest {
    private static final int KEY_GROUPS = 4;
    private static final KeyGroupRange ALL = KeyGroupRange.of(0, KEY_GROUPS - 1);
    private static final String OPERATOR = "StreamMap_0a448493b4782967b150582570326227_(1/1)";
    private static final ValueStateDescriptor<Integer> COUNT =
            new ValueStateDescriptor<>("count", IntSerializer.INSTANCE);

    private static EmbeddedKvServer server;
    private static KvStore store;
    private static MockEnvironment env;

    @BeforeAll
    static void startServer() {
        server = EmbeddedKvServer.start();
        store = KvStores.connect(KvClientConfig.forAddresses(server.address()).build());
        env = MockEnvironment.builder().build();
    }

    @AfterAll
    static void stopServer() throws Exception {
        env.close();
        store.close();
        server.close();
    }

    @Test
    void failoverRollsTheSameJobsShardsBackAndFencesTheOldAttempt() throws Exception {
        JobID job = new JobID();
        TaishanKeyedStateBackend<String> first = create(job, List.of());
        update(first, "a", 1);
        update(first, "b", 1);
        KeyedStateHandle checkpoint = snapshot(first, 1, CheckpointType.CHECKPOINT);
        update(first, "a", 2);
        update(first, "c", 2);
        first.writeQueue().flushAndWait(); // the later writes reach the store

        TaishanKeyedStateBackend<String> second = create(job, List.of(checkpoint));
        try {
            assertThat(value(second, "a")).isEqualTo(1);
            assertThat(value(second, "b")).isEqualTo(1);
            assertThat(value(second, "c")).isNull();

            // The first attempt is a zombie now: its next write is fenced, never applied.
            update(first, "a", 99);
            assertThatThrownBy(() -> first.numKeyValueStateEntries())
                    .satisfies(
                            e ->
                                    assertThat(
                                                    ExceptionUtils.findThrowable(
                                                            e, FencedException.class))
                                            .isPresent());
            assertThat(value(second, "a")).isEqualTo(1);
        } finally {
            first.dispose();
            second.dispose();
        }
    }

    /**
     * A run restored from checkpoint 1 reuses checkpoint id 2 of the lost future (as after a
     * failover, or a resubmission under the same JobID): its checkpoint 2 must hold its own state,
     * not the earlier snapshot the store keeps under that id.
     */
    @Test
    void aRestoredRunNeverReusesSnapshotsOfTheLostFuture() throws Exception {
        JobID job = new JobID();
        TaishanKeyedStateBackend<String> first = create(job, List.of());
        update(first, "a", 1);
        KeyedStateHandle one = snapshot(first, 1, CheckpointType.CHECKPOINT);
        update(first, "a", 2);
        snapshot(first, 2, CheckpointType.CHECKPOINT);
        first.dispose();

        TaishanKeyedStateBackend<String> second = create(job, List.of(one));
        assertThat(value(second, "a")).isEqualTo(1);
        update(second, "a", 10);
        KeyedStateHandle two = snapshot(second, 2, CheckpointType.CHECKPOINT);
        second.dispose();

        TaishanKeyedStateBackend<String> third = create(job, List.of(two));
        try {
            assertThat(value(third, "a")).isEqualTo(10);
        } finally {
            third.dispose();
        }
    }

    @Test
    void aNewAttemptWithoutCheckpointStartsEmptyInTheExistingTable() throws Exception {
        JobID job = new JobID();
        TaishanKeyedStateBackend<String> first = create(job, List.of());
        update(first, "a", 1);
        assertThat(first.numKeyValueStateEntries()).isEqualTo(1);
        first.dispose();

        TaishanKeyedStateBackend<String> second = create(job, List.of());
        try {
            assertThat(value(second, "a")).isNull();
            assertThat(second.numKeyValueStateEntries()).isZero();
        } finally {
            second.dispose();
        }
    }

    @Test
    void anotherJobClonesTheSnapshotsWhileTheSourceKeepsChanging() throws Exception {
        TaishanKeyedStateBackend<String> source = create(new JobID(), List.of());
        update(source, "a", 1);
        KeyedStateHandle checkpoint = snapshot(source, 5, CheckpointType.CHECKPOINT);
        update(source, "a", 2);

        TaishanKeyedStateBackend<String> clone = create(new JobID(), List.of(checkpoint));
        try {
            assertThat(clone.tableName()).isNotEqualTo(source.tableName());
            assertThat(value(clone, "a")).isEqualTo(1);
            update(clone, "a", 3);
            assertThat(value(source, "a")).isEqualTo(2);
        } finally {
            source.dispose();
            clone.dispose();
        }
    }

    @Test
    void subsumedCheckpointsReleaseOlderUnpinnedSnapshots() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(new JobID(), List.of());
        try {
            update(backend, "a", 1);
            snapshot(backend, 1, CheckpointType.CHECKPOINT);
            snapshot(backend, 2, SavepointType.savepoint(SavepointFormatType.NATIVE));
            snapshot(backend, 3, CheckpointType.CHECKPOINT);
            snapshot(backend, 4, CheckpointType.CHECKPOINT);

            backend.notifyCheckpointSubsumed(3);
            backend.lastRelease().get();

            assertThat(snapshotIds(backend.tableName())).containsOnly(2L, 4L);
            assertThat(store.listSnapshots(backend.tableName()))
                    .filteredOn(s -> s.snapshotId() == 2)
                    .allMatch(SnapshotInfo::pinned)
                    .hasSize(KEY_GROUPS);

            // A lower (late) notification never lowers the watermark.
            backend.notifyCheckpointSubsumed(1);
            backend.lastRelease().get();
            assertThat(snapshotIds(backend.tableName())).containsOnly(2L, 4L);

            snapshot(backend, 5, CheckpointType.CHECKPOINT);
            backend.notifyCheckpointAborted(5);
            backend.lastRelease().get();
            assertThat(snapshotIds(backend.tableName())).containsOnly(2L, 4L);
        } finally {
            backend.dispose();
        }
    }

    @Test
    void aReleaseAskedRightBeforeCancelStillReachesTheServer() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(new JobID(), List.of());
        String table = backend.tableName();
        try {
            update(backend, "a", 1);
            snapshot(backend, 1, CheckpointType.CHECKPOINT);
            snapshot(backend, 2, CheckpointType.CHECKPOINT);
            snapshot(backend, 3, CheckpointType.CHECKPOINT);
            backend.notifyCheckpointSubsumed(1);
            backend.notifyCheckpointAborted(3);
        } finally {
            // A cancel: the task disposes the backend while the drops are still queued.
            backend.dispose();
        }
        assertThat(snapshotIds(table)).containsOnly(2L);
    }

    /**
     * A cancel mid-checkpoint: the JobManager cannot complete a checkpoint whose handle this
     * subtask never returned, so its shard snapshots are dropped at dispose; one whose handle was
     * returned may be complete (its notification still on the way) and must stay.
     */
    @Test
    void disposeDropsTheSnapshotsOfCheckpointsWhoseHandleWasNeverReturned() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(new JobID(), List.of());
        String table = backend.tableName();
        try {
            update(backend, "a", 1);
            snapshot(backend, 1, CheckpointType.CHECKPOINT);
            backend.notifyCheckpointComplete(1);
            snapshot(backend, 2, CheckpointType.CHECKPOINT); // returned, never notified
            update(backend, "a", 2);
            RunnableFuture<SnapshotResult<KeyedStateHandle>> cancelled =
                    startSnapshot(backend, 3, CheckpointType.CHECKPOINT);
            RunnableFuture<SnapshotResult<KeyedStateHandle>> neverRun =
                    startSnapshot(backend, 4, SavepointType.savepoint(SavepointFormatType.NATIVE));
            backend.writeQueue().flushAndWait(); // markers 3 and 4 are on the server
            assertThat(snapshotIds(table)).contains(3L, 4L);
            cancelled.cancel(true);
        } finally {
            backend.dispose();
        }
        assertThat(snapshotIds(table)).containsOnly(1L, 2L);
    }

    @Test
    void anAsynchronousPhaseRunAfterDisposeReturnsNoHandleAndLeavesNoSnapshot() throws Exception {
        TaishanKeyedStateBackend<String> backend = create(new JobID(), List.of());
        String table = backend.tableName();
        RunnableFuture<SnapshotResult<KeyedStateHandle>> late;
        try {
            update(backend, "a", 1);
            late = startSnapshot(backend, 1, CheckpointType.CHECKPOINT);
            backend.writeQueue().flushAndWait();
        } finally {
            backend.dispose();
        }
        late.run();
        // Flink's dispose cancels the future; had it run, the releaser would refuse the handle.
        assertThatThrownBy(late::get).isInstanceOf(Exception.class);
        assertThat(snapshotIds(table)).isEmpty();
    }

    /**
     * A checkpoint whose snapshots were dropped on the server: the restore says which are missing
     * and creates no table for the new job.
     */
    @Test
    void aRestoreFromDroppedSnapshotsNamesThemAndLeavesNoTable() throws Exception {
        TaishanKeyedStateBackend<String> source = create(new JobID(), List.of());
        KeyedStateHandle checkpoint;
        try {
            update(source, "a", 1);
            checkpoint = snapshot(source, 7, CheckpointType.CHECKPOINT);
            store.dropSnapshot(source.tableName(), 2, 7);
        } finally {
            source.dispose();
        }
        JobID next = new JobID();
        String nextTable = new TaishanStateBackend().tableName(next, OPERATOR);

        assertThatThrownBy(() -> create(next, List.of(checkpoint)))
                .satisfies(
                        e ->
                                assertThat(ExceptionUtils.stringifyException(e))
                                        .contains("snapshot 7")
                                        .contains("shard 2")
                                        .contains(source.tableName()));
        assertThat(store.describeTable(nextTable)).isEmpty();
    }

    /** A restore failing after its table was created (here: the key type changed) drops it. */
    @Test
    void aRestoreFailingAfterItCreatedTheTableDropsIt() throws Exception {
        TaishanKeyedStateBackend<String> source = create(new JobID(), List.of());
        KeyedStateHandle savepoint;
        try {
            update(source, "a", 1);
            SavepointResources<String> resources = source.savepoint();
            RunnableFuture<SnapshotResult<KeyedStateHandle>> future =
                    new SnapshotStrategyRunner<>(
                                    "canonical savepoint",
                                    new SavepointSnapshotStrategy<>(
                                            resources.getSnapshotResources()),
                                    new CloseableRegistry(),
                                    resources.getPreferredSnapshotExecutionType())
                            .snapshot(
                                    1,
                                    1,
                                    new MemCheckpointStreamFactory(1 << 20),
                                    new CheckpointOptions(
                                            SavepointType.savepoint(SavepointFormatType.CANONICAL),
                                            CheckpointStorageLocationReference.getDefault()));
            future.run();
            savepoint = future.get().getJobManagerOwnedSnapshot();
            assertThat(savepoint).isInstanceOf(SavepointKeyedStateHandle.class);
        } finally {
            source.dispose();
        }
        JobID next = new JobID();
        String nextTable = new TaishanStateBackend().tableName(next, OPERATOR);
        TaishanStateBackend backend = new TaishanStateBackend().setKvAddress(server.address());

        assertThatThrownBy(
                        () ->
                                backend.createKeyedStateBackend(
                                        new KeyedStateBackendParametersImpl<>(
                                                env,
                                                next,
                                                OPERATOR,
                                                IntSerializer.INSTANCE,
                                                KEY_GROUPS,
                                                ALL,
                                                env.getTaskKvStateRegistry(),
                                                TtlTimeProvider.DEFAULT,
                                                new UnregisteredMetricsGroup(),
                                                List.of(savepoint),
                                                new CloseableRegistry())))
                .satisfies(
                        e ->
                                assertThat(
                                                ExceptionUtils.findThrowable(
                                                        e, StateMigrationException.class))
                                        .isPresent());
        assertThat(store.describeTable(nextTable)).isEmpty();
    }

    @Test
    void heapTimersStayOutOfTheStoreAndGoToRawKeyedStateInCheckpoints() throws Exception {
        TaishanStateBackend heap =
                new TaishanStateBackend()
                        .setKvAddress(server.address())
                        .setTimerService(TaishanOptions.TimerServiceType.HEAP);
        TaishanKeyedStateBackend<String> backend =
                (TaishanKeyedStateBackend<String>)
                        heap.createKeyedStateBackend(parameters(new JobID(), List.of()));
        TaishanKeyedStateBackend<String> remote = create(new JobID(), List.of());
        try {
            TimerSerializer<String, VoidNamespace> serializer =
                    new TimerSerializer<>(
                            StringSerializer.INSTANCE, VoidNamespaceSerializer.INSTANCE);
            backend.create("_timer_state/event_user-timers", serializer)
                    .add(new TimerHeapInternalTimer<>(7, "a", VoidNamespace.INSTANCE));

            assertThat(backend.numKeyValueStateEntries()).isZero();
            assertThat(snapshot(backend, 1, CheckpointType.CHECKPOINT)).isNull();
            assertThat(backend.requiresLegacySynchronousTimerSnapshots(CheckpointType.CHECKPOINT))
                    .isTrue();
            assertThat(
                            backend.requiresLegacySynchronousTimerSnapshots(
                                    SavepointType.savepoint(SavepointFormatType.NATIVE)))
                    .isTrue();
            // A canonical savepoint carries them as state entries, as RocksDB's.
            assertThat(
                            backend.requiresLegacySynchronousTimerSnapshots(
                                    SavepointType.savepoint(SavepointFormatType.CANONICAL)))
                    .isFalse();
            assertThat(heap.supportsSavepointFormat(SavepointFormatType.CANONICAL)).isTrue();

            remote.create("_timer_state/event_user-timers", serializer)
                    .add(new TimerHeapInternalTimer<>(7, "a", VoidNamespace.INSTANCE));
            assertThat(remote.numKeyValueStateEntries()).isEqualTo(1);
            assertThat(remote.requiresLegacySynchronousTimerSnapshots(CheckpointType.CHECKPOINT))
                    .isFalse();
        } finally {
            backend.dispose();
            remote.dispose();
        }
    }

    @Test
    void anUnreachableServerFailsTheTaskNamingTheAddress() {
        TaishanStateBackend backend =
                new TaishanStateBackend()
                        .setKvAddress("127.0.0.1:1")
                        .setRequestTimeout(Duration.ofMillis(500))
                        .setMaxAttempts(1);

        assertThatThrownBy(
                        () -> backend.createKeyedStateBackend(parameters(new JobID(), List.of())))
                .hasStackTraceContaining("Cannot reach the Taishan kv-server at 127.0.0.1:1")
                .hasStackTraceContaining("the connection was refused")
                .hasStackTraceContaining("1 attempt(s) in");
    }

    @Test
    void aTablePrefixWithCharactersTheStoreDoesNotAllowIsRejected() {
        assertThatThrownBy(() -> new TaishanStateBackend().setTablePrefix("team a/b"))
                .isInstanceOf(org.apache.flink.configuration.IllegalConfigurationException.class)
                .hasMessageContaining("'team a/b'");
        Configuration config = new Configuration();
        config.set(TaishanOptions.TABLE_PREFIX, "team:a");
        assertThatThrownBy(
                        () ->
                                new TaishanStateBackendFactory()
                                        .createFromConfig(config, getClass().getClassLoader()))
                .hasMessageContaining("'team:a'");
        assertThat(
                        new TaishanStateBackend()
                                .setTablePrefix("team-a.b_1")
                                .tableName(new JobID(), "op"))
                .startsWith("team-a.b_1_");
    }

    @Test
    void anAddressTheClientCannotDialIsRejectedAtConfiguration() {
        assertThatThrownBy(() -> new TaishanStateBackend().setKvAddress("127.0.0.1:7600:9"))
                .hasMessageContaining("'127.0.0.1:7600:9'");
    }

    @Test
    void theFactoryReadsOptionsAndConnectsToNothing() throws Exception {
        Configuration config = new Configuration();
        config.set(TaishanOptions.KV_ADDRESS, "127.0.0.1:1");
        config.set(TaishanOptions.TIMER_SERVICE, TaishanOptions.TimerServiceType.HEAP);

        TaishanStateBackend backend =
                new TaishanStateBackendFactory()
                        .createFromConfig(config, getClass().getClassLoader());

        assertThat(backend.getKvAddress()).isEqualTo("127.0.0.1:1");
        assertThat(backend.getTimerService()).isEqualTo(TaishanOptions.TimerServiceType.HEAP);
        assertThat(backend.supportsNoClaimRestoreMode()).isTrue();
        // Settings made in the application win over the cluster configuration.
        TaishanStateBackend fromApp =
                new TaishanStateBackend()
                        .setKvAddress("10.0.0.1:7000")
                        .configure(config, getClass().getClassLoader());
        assertThat(fromApp.getKvAddress()).isEqualTo("10.0.0.1:7000");
    }

    @Test
    void theTableIsNamedByJobAndOperatorIdNotBySubtask() {
        TaishanStateBackend backend = new TaishanStateBackend();
        JobID job = new JobID();
        String one = backend.tableName(job, "StreamMap_0a448493b4782967b150582570326227_(1/2)");
        String other = backend.tableName(job, "StreamMap_0a448493b4782967b150582570326227_(4/4)");

        assertThat(one)
                .isEqualTo(other)
                .isEqualTo("flink_" + job + "_0a448493b4782967b150582570326227");
        assertThat(backend.tableName(job, "test op/1")).isEqualTo("flink_" + job + "_test_op_1");
    }

    // ---- helpers

    private static TaishanKeyedStateBackend<String> create(
            JobID job, Collection<KeyedStateHandle> handles) throws Exception {
        TaishanStateBackend backend = new TaishanStateBackend().setKvAddress(server.address());
        return (TaishanKeyedStateBackend<String>)
                backend.createKeyedStateBackend(parameters(job, handles));
    }

    private static KeyedStateBackendParametersImpl<String> parameters(
            JobID job, Collection<KeyedStateHandle> handles) {
        return new KeyedStateBackendParametersImpl<>(
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
                new CloseableRegistry());
    }

    private static void update(TaishanKeyedStateBackend<String> backend, String key, int value)
            throws Exception {
        backend.setCurrentKey(key);
        state(backend).update(value);
    }

    private static Integer value(TaishanKeyedStateBackend<String> backend, String key)
            throws Exception {
        backend.setCurrentKey(key);
        return state(backend).value();
    }

    private static ValueState<Integer> state(TaishanKeyedStateBackend<String> backend)
            throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, COUNT);
    }

    private static KeyedStateHandle snapshot(
            TaishanKeyedStateBackend<String> backend,
            long checkpointId,
            org.apache.flink.runtime.checkpoint.SnapshotType type)
            throws Exception {
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future =
                startSnapshot(backend, checkpointId, type);
        future.run();
        return future.get().getJobManagerOwnedSnapshot();
    }

    /** The synchronous phase only; running the future is the asynchronous phase. */
    private static RunnableFuture<SnapshotResult<KeyedStateHandle>> startSnapshot(
            TaishanKeyedStateBackend<String> backend,
            long checkpointId,
            org.apache.flink.runtime.checkpoint.SnapshotType type)
            throws Exception {
        return backend.snapshot(
                checkpointId,
                checkpointId,
                new MemCheckpointStreamFactory(1 << 20),
                new CheckpointOptions(type, CheckpointStorageLocationReference.getDefault()));
    }

    private static List<Long> snapshotIds(String table) {
        return store.listSnapshots(table).stream().map(SnapshotInfo::snapshotId).toList();
    }
}
