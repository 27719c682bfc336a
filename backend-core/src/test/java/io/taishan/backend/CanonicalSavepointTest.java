package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RunnableFuture;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.AbstractStateBackend;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.streaming.api.operators.StreamOperatorStateHandler;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Canonical savepoints both ways between Taishan and Flink's HashMap backend (the migration path
 * onto and off Taishan), with value, list and map state and REMOTE or HEAP timers, and rescales.
 */
class CanonicalSavepointTest {
    private static final int KEY_GROUPS = 4;
    private static final KeyGroupRange ALL = KeyGroupRange.of(0, KEY_GROUPS - 1);
    private static final String TIMERS = "_timer_state/event_user-timers";
    private static final List<String> KEYS = List.of("a", "b", "c", "d", "e", "f", "g", "h");

    private static final ValueStateDescriptor<Integer> VALUE =
            new ValueStateDescriptor<>("value", IntSerializer.INSTANCE);
    private static final ListStateDescriptor<String> LIST =
            new ListStateDescriptor<>("list", StringSerializer.INSTANCE);
    private static final MapStateDescriptor<String, Integer> MAP =
            new MapStateDescriptor<>("map", StringSerializer.INSTANCE, IntSerializer.INSTANCE);
    private static final TimerSerializer<String, VoidNamespace> TIMER_SERIALIZER =
            new TimerSerializer<>(StringSerializer.INSTANCE, VoidNamespaceSerializer.INSTANCE);

    private static EmbeddedKvServer server;
    private static MockEnvironment env;

    @BeforeAll
    static void startServer() {
        server = EmbeddedKvServer.start();
        env = MockEnvironment.builder().build();
    }

    @AfterAll
    static void stopServer() throws Exception {
        env.close();
        server.close();
    }

    @Test
    void aHashMapSavepointLoadsIntoTaishan() throws Exception {
        AbstractKeyedStateBackend<String> source =
                create(new HashMapStateBackend(), ALL, List.of());
        fill(source);
        KeyedStateHandle savepoint = canonicalSavepoint(source);
        source.dispose();

        AbstractKeyedStateBackend<String> target = create(taishan(), ALL, List.of(savepoint));
        try {
            assertThat(target).isInstanceOf(TaishanKeyedStateBackend.class);
            verify(target, KEYS, false);
        } finally {
            target.dispose();
        }
    }

    @Test
    void aTaishanSavepointLoadsIntoHashMap() throws Exception {
        AbstractKeyedStateBackend<String> source = create(taishan(), ALL, List.of());
        fill(source);
        KeyedStateHandle savepoint = canonicalSavepoint(source);
        source.dispose();

        AbstractKeyedStateBackend<String> target =
                create(new HashMapStateBackend(), ALL, List.of(savepoint));
        try {
            verify(target, KEYS, true);
        } finally {
            target.dispose();
        }
    }

    @Test
    void aTaishanSavepointRescalesIntoTwoSubtasks() throws Exception {
        AbstractKeyedStateBackend<String> source = create(taishan(), ALL, List.of());
        fill(source);
        KeyGroupsStateHandle savepoint = (KeyGroupsStateHandle) canonicalSavepoint(source);
        source.dispose();

        List<String> seen = new ArrayList<>();
        for (KeyGroupRange half : List.of(KeyGroupRange.of(0, 1), KeyGroupRange.of(2, 3))) {
            AbstractKeyedStateBackend<String> target =
                    create(taishan(), half, List.of(savepoint.getIntersection(half)));
            try {
                List<String> mine = new ArrayList<>();
                try (var keys = target.getKeys(VALUE.getName(), VoidNamespace.INSTANCE)) {
                    keys.forEach(mine::add);
                }
                verify(target, mine, true);
                seen.addAll(mine);
            } finally {
                target.dispose();
            }
        }
        assertThat(seen).containsExactlyInAnyOrderElementsOf(KEYS);
    }

    @Test
    void aTaishanSavepointWithHeapTimersLoadsIntoEveryBackend() throws Exception {
        AbstractKeyedStateBackend<String> source = create(taishanHeapTimers(), ALL, List.of());
        fill(source);
        KeyedStateHandle savepoint = canonicalSavepoint(source);
        source.dispose();

        for (AbstractStateBackend backend :
                List.of(taishanHeapTimers(), taishan(), new HashMapStateBackend())) {
            AbstractKeyedStateBackend<String> target = create(backend, ALL, List.of(savepoint));
            try {
                verify(target, KEYS, true);
            } finally {
                target.dispose();
            }
        }
    }

    @Test
    void heapTimersStayOnTheHeapWhenASavepointIsLoaded() throws Exception {
        AbstractKeyedStateBackend<String> source =
                create(new HashMapStateBackend(), ALL, List.of());
        fill(source);
        KeyedStateHandle savepoint = canonicalSavepoint(source);
        source.dispose();

        AbstractKeyedStateBackend<String> target =
                create(taishanHeapTimers(), ALL, List.of(savepoint));
        try {
            // value, list (one entry each) and map (one user key) per key; no timer in the store.
            assertThat(target.numKeyValueStateEntries()).isEqualTo(3 * KEYS.size());
            verify(target, KEYS, false);
        } finally {
            target.dispose();
        }
    }

    @Test
    void aTaishanSavepointWithHeapTimersRescalesIntoTwoSubtasks() throws Exception {
        AbstractKeyedStateBackend<String> source = create(taishanHeapTimers(), ALL, List.of());
        fill(source);
        KeyGroupsStateHandle savepoint = (KeyGroupsStateHandle) canonicalSavepoint(source);
        source.dispose();

        List<String> seen = new ArrayList<>();
        for (KeyGroupRange half : List.of(KeyGroupRange.of(0, 1), KeyGroupRange.of(2, 3))) {
            AbstractKeyedStateBackend<String> target =
                    create(taishanHeapTimers(), half, List.of(savepoint.getIntersection(half)));
            try {
                List<String> mine = new ArrayList<>();
                try (var keys = target.getKeys(VALUE.getName(), VoidNamespace.INSTANCE)) {
                    keys.forEach(mine::add);
                }
                verify(target, mine, true);
                seen.addAll(mine);
            } finally {
                target.dispose();
            }
        }
        assertThat(seen).containsExactlyInAnyOrderElementsOf(KEYS);
    }

    /**
     * Fills every kind of state. Flink's HashMap backend cannot write a null map value into a
     * canonical savepoint (its iterator serializes it as is), so it gets none.
     */
    private static void fill(AbstractKeyedStateBackend<String> backend) throws Exception {
        boolean nullMapValue = backend instanceof TaishanKeyedStateBackend;
        KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<String, VoidNamespace>> timers =
                backend.create(TIMERS, TIMER_SERIALIZER);
        for (int i = 0; i < KEYS.size(); i++) {
            String key = KEYS.get(i);
            backend.setCurrentKey(key);
            value(backend).update(i);
            list(backend).add(key + "-1");
            list(backend).add(key + "-2");
            map(backend).put("x", i);
            if (nullMapValue) {
                map(backend).put("null", null);
            }
            timers.add(new TimerHeapInternalTimer<>(100 + i, key, VoidNamespace.INSTANCE));
        }
    }

    private static void verify(
            AbstractKeyedStateBackend<String> backend, List<String> keys, boolean nullMapValue)
            throws Exception {
        Map<String, Long> timersByKey = new HashMap<>();
        KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<String, VoidNamespace>> timers =
                backend.create(TIMERS, TIMER_SERIALIZER);
        TimerHeapInternalTimer<String, VoidNamespace> timer;
        while ((timer = timers.poll()) != null) {
            timersByKey.put(timer.getKey(), timer.getTimestamp());
        }
        assertThat(timersByKey).hasSize(keys.size());
        for (String key : keys) {
            int i = KEYS.indexOf(key);
            backend.setCurrentKey(key);
            assertThat(value(backend).value()).isEqualTo(i);
            assertThat(list(backend).get()).containsExactly(key + "-1", key + "-2");
            Map<String, Integer> entries = new HashMap<>();
            map(backend).entries().forEach(e -> entries.put(e.getKey(), e.getValue()));
            Map<String, Integer> expected = new HashMap<>();
            expected.put("x", i);
            if (nullMapValue) {
                expected.put("null", null);
            }
            assertThat(entries).isEqualTo(expected);
            assertThat(timersByKey.get(key)).isEqualTo(100L + i);
        }
    }

    private static ValueState<Integer> value(AbstractKeyedStateBackend<String> b) throws Exception {
        return b.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, VALUE);
    }

    private static ListState<String> list(AbstractKeyedStateBackend<String> b) throws Exception {
        return b.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, LIST);
    }

    private static MapState<String, Integer> map(AbstractKeyedStateBackend<String> b)
            throws Exception {
        return b.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, MAP);
    }

    private static TaishanStateBackend taishan() {
        return new TaishanStateBackend().setKvAddress(server.address());
    }

    private static TaishanStateBackend taishanHeapTimers() {
        return taishan().setTimerService(TaishanOptions.TimerServiceType.HEAP);
    }

    private static AbstractKeyedStateBackend<String> create(
            AbstractStateBackend backend, KeyGroupRange range, Collection<KeyedStateHandle> handles)
            throws Exception {
        JobID job = new JobID();
        return backend.createKeyedStateBackend(
                new KeyedStateBackendParametersImpl<>(
                        env,
                        job,
                        "test_op",
                        StringSerializer.INSTANCE,
                        KEY_GROUPS,
                        range,
                        env.getTaskKvStateRegistry(),
                        TtlTimeProvider.DEFAULT,
                        new UnregisteredMetricsGroup(),
                        handles,
                        new CloseableRegistry()));
    }

    private static KeyedStateHandle canonicalSavepoint(AbstractKeyedStateBackend<String> backend)
            throws Exception {
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future =
                StreamOperatorStateHandler.prepareCanonicalSavepoint(
                                backend, new CloseableRegistry())
                        .snapshot(
                                1,
                                1,
                                new MemCheckpointStreamFactory(4 << 20),
                                new CheckpointOptions(
                                        SavepointType.savepoint(SavepointFormatType.CANONICAL),
                                        CheckpointStorageLocationReference.getDefault()));
        future.run();
        return future.get().getJobManagerOwnedSnapshot();
    }
}
