package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import io.taishan.kv.server.EmbeddedKvServer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.RunnableFuture;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Reads of absent keys are answered by the shard's Bloom filter, with no call to the server: on a
 * new table at once, and after a restore (same job, rescaled, another job's clone) once the
 * server's filters are loaded. The cache is off here, so every read that is not answered by the
 * filter is a remote {@code Get}, which the backend counts.
 */
class BloomFilterReadTest {
    private static final int KEY_GROUPS = 32;
    private static final int PRESENT = 4_000;
    private static final int ABSENT = 4_000;

    private static final ValueStateDescriptor<Long> VALUE =
            new ValueStateDescriptor<>("value", LongSerializer.INSTANCE);

    private static EmbeddedKvServer server;
    private static MockEnvironment env;

    @BeforeAll
    static void start() {
        server = EmbeddedKvServer.start();
        env = MockEnvironment.builder().build();
    }

    @AfterAll
    static void stop() throws Exception {
        env.close();
        server.close();
    }

    @Test
    void absentKeysCostNoServerCallOnANewTableOrAfterARestoreOrRescale() throws Exception {
        JobID job = new JobID();
        TaishanKeyedStateBackend<Integer> first = create(job, full(), List.of());
        for (int key = 0; key < PRESENT; key++) {
            first.setCurrentKey(key);
            state(first).update((long) key);
        }
        long gets = first.readMetrics().remoteGets();
        assertThat(readAbsent(first)).isEqualTo(ABSENT);
        assertThat(first.readMetrics().remoteGets() - gets)
                .as("remote gets for %d absent keys on a new table", ABSENT)
                .isLessThanOrEqualTo(ABSENT / 100);
        KeyedStateHandle checkpoint = snapshot(first, 1);
        first.dispose();

        // Same job, one subtask: every shard rolled back; reads go to the server until loaded.
        TaishanKeyedStateBackend<Integer> restored = create(job, full(), List.of(checkpoint));
        try {
            awaitFiltersLoaded(restored);
            assertAbsentReadsStayLocalAndPresentOnesAreFound(restored, "same job");
        } finally {
            restored.dispose();
        }

        // Another job (a clone of every shard), rescaled to two subtasks.
        JobID other = new JobID();
        for (int i = 0; i < 2; i++) {
            KeyGroupRange range =
                    KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(KEY_GROUPS, 2, i);
            TaishanKeyedStateBackend<Integer> half = create(other, range, List.of(checkpoint));
            try {
                awaitFiltersLoaded(half);
                assertAbsentReadsStayLocalAndPresentOnesAreFound(half, "clone, subtask " + i);
            } finally {
                half.dispose();
            }
        }
    }

    /**
     * Shards that grow far beyond the first filter's size: the server rebuilds its filters as they
     * fill, every write result reports the new version, and the backend loads it, so absent keys
     * stay local.
     */
    @Test
    void absentKeysStayLocalAsShardsOutgrowTheirFirstFilter() throws Exception {
        int keyGroups = 2;
        int keys = 100_000;
        JobID job = new JobID();
        TaishanKeyedStateBackend<Integer> backend =
                create(job, new KeyGroupRange(0, keyGroups - 1), List.of(), keyGroups);
        try {
            for (int key = 0; key < keys; key++) {
                backend.setCurrentKey(key);
                state(backend).update((long) key);
            }
            backend.writeQueue().flushAndWait();
            long deadline = System.nanoTime() + 60_000_000_000L;
            double share;
            do {
                Thread.sleep(200);
                long before = backend.readMetrics().remoteGets();
                for (int key = keys; key < keys + 2_000; key++) {
                    backend.setCurrentKey(key);
                    assertThat(state(backend).value()).isNull();
                }
                share = (backend.readMetrics().remoteGets() - before) / 2_000.0;
                System.out.printf(
                        "absent share %.4f, versions %s%n", share, backend.filters().versions());
            } while (share > 0.01 && System.nanoTime() < deadline);
            assertThat(share)
                    .as(
                            "share of absent lookups reaching the server, %d keys per shard",
                            keys / keyGroups)
                    .isLessThanOrEqualTo(0.01);
        } finally {
            backend.dispose();
        }
    }

    /**
     * Timers are only ever scanned, never looked up: they take no room in the server's Bloom
     * filters, which stay as sharp as the state that is read.
     */
    @Test
    void timersTakeNoRoomInTheServersFilters() throws Exception {
        TaishanKeyedStateBackend<Integer> backend =
                create(new JobID(), new KeyGroupRange(0, 1), List.of(), 2);
        try (KvStore store =
                KvStores.connect(KvClientConfig.forAddresses(server.address()).build())) {
            TimerSerializer<Integer, VoidNamespace> serializer =
                    new TimerSerializer<>(IntSerializer.INSTANCE, VoidNamespaceSerializer.INSTANCE);
            KeyGroupedInternalPriorityQueue<TimerHeapInternalTimer<Integer, VoidNamespace>> timers =
                    backend.create("_timer_state/processing_user-timers", serializer);
            for (int key = 0; key < 20_000; key++) {
                backend.setCurrentKey(key);
                timers.add(new TimerHeapInternalTimer<>(1_000L + key, key, VoidNamespace.INSTANCE));
            }
            backend.writeQueue().flushAndWait();

            assertThat(store.admin().orElseThrow().describeShards(backend.tableName()))
                    .hasSize(2)
                    .allSatisfy(
                            shard ->
                                    assertThat(shard.estimatedFpp())
                                            .as(
                                                    "modelled false-positive rate of shard %d",
                                                    shard.shard())
                                            .isZero());
        } finally {
            backend.dispose();
        }
    }

    /**
     * With the cache on, lists built by appends to keys the filter ruled out are cached from their
     * first element: reading them back costs no server call.
     */
    @Test
    void listsBuiltByAppendsAreReadBackFromTheCache() throws Exception {
        TaishanStateBackend factory =
                new TaishanStateBackend()
                        .setKvAddress(server.address())
                        .setCacheType("off-heap")
                        .setCacheSize(org.apache.flink.configuration.MemorySize.parse("16mb"));
        @SuppressWarnings("unchecked")
        TaishanKeyedStateBackend<Integer> backend =
                (TaishanKeyedStateBackend<Integer>)
                        factory.createKeyedStateBackend(
                                new KeyedStateBackendParametersImpl<>(
                                        env,
                                        new JobID(),
                                        "list_op",
                                        IntSerializer.INSTANCE,
                                        KEY_GROUPS,
                                        full(),
                                        env.getTaskKvStateRegistry(),
                                        TtlTimeProvider.DEFAULT,
                                        new UnregisteredMetricsGroup(),
                                        List.of(),
                                        new CloseableRegistry()));
        try {
            org.apache.flink.api.common.state.ListStateDescriptor<Long> descriptor =
                    new org.apache.flink.api.common.state.ListStateDescriptor<>(
                            "list", LongSerializer.INSTANCE);
            org.apache.flink.api.common.state.ListState<Long> list =
                    backend.getPartitionedState(
                            VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
            for (int key = 0; key < 1_000; key++) {
                backend.setCurrentKey(key);
                list.add((long) key);
                list.add((long) -key);
            }
            backend.writeQueue().flushAndWait();
            long before = backend.readMetrics().remoteGets();
            for (int key = 0; key < 1_000; key++) {
                backend.setCurrentKey(key);
                assertThat(list.get()).containsExactly((long) key, (long) -key);
            }
            assertThat(backend.readMetrics().remoteGets() - before).isZero();
        } finally {
            backend.dispose();
        }
    }

    private static void assertAbsentReadsStayLocalAndPresentOnesAreFound(
            TaishanKeyedStateBackend<Integer> backend, String what) throws Exception {
        long before = backend.readMetrics().remoteGets();
        int absent = readAbsent(backend);
        long remote = backend.readMetrics().remoteGets() - before;
        assertThat(remote)
                .as("%s: remote gets for %d absent keys once the filters are loaded", what, absent)
                .isLessThanOrEqualTo(Math.max(1, absent / 100));
        for (int key = 0; key < PRESENT; key++) {
            if (owns(backend, key)) {
                backend.setCurrentKey(key);
                assertThat(state(backend).value()).as("%s: key %d", what, key).isEqualTo(key);
            }
        }
    }

    /** Reads keys never written (above the present ones) that this backend owns. */
    private static int readAbsent(TaishanKeyedStateBackend<Integer> backend) throws Exception {
        int read = 0;
        for (int key = PRESENT; key < PRESENT + 2 * ABSENT && read < ABSENT; key++) {
            if (owns(backend, key)) {
                backend.setCurrentKey(key);
                assertThat(state(backend).value()).isNull();
                read++;
            }
        }
        return read;
    }

    private static boolean owns(TaishanKeyedStateBackend<Integer> backend, int key) {
        return backend.getKeyGroupRange()
                .contains(KeyGroupRangeAssignment.assignToKeyGroup(key, KEY_GROUPS));
    }

    private static void awaitFiltersLoaded(TaishanKeyedStateBackend<Integer> backend)
            throws InterruptedException {
        int shards = backend.getKeyGroupRange().getNumberOfKeyGroups();
        long start = System.nanoTime();
        long deadline = start + 30_000_000_000L;
        while (backend.filters().loadedShards() < shards) {
            assertThat(System.nanoTime()).as("filters loaded within 30 s").isLessThan(deadline);
            Thread.sleep(1);
        }
        System.out.printf(
                "%d shard filters loaded %d ms after the restore returned%n",
                shards, (System.nanoTime() - start) / 1_000_000);
    }

    private static ValueState<Long> state(TaishanKeyedStateBackend<Integer> backend)
            throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, VALUE);
    }

    private static KeyGroupRange full() {
        return new KeyGroupRange(0, KEY_GROUPS - 1);
    }

    @SuppressWarnings("unchecked")
    private static TaishanKeyedStateBackend<Integer> create(
            JobID job, KeyGroupRange range, Collection<KeyedStateHandle> handles) throws Exception {
        return create(job, range, handles, KEY_GROUPS);
    }

    @SuppressWarnings("unchecked")
    private static TaishanKeyedStateBackend<Integer> create(
            JobID job, KeyGroupRange range, Collection<KeyedStateHandle> handles, int keyGroups)
            throws Exception {
        TaishanStateBackend backend =
                new TaishanStateBackend().setKvAddress(server.address()).setCacheType("none");
        return (TaishanKeyedStateBackend<Integer>)
                backend.createKeyedStateBackend(
                        new KeyedStateBackendParametersImpl<>(
                                env,
                                job,
                                "bloom_op",
                                IntSerializer.INSTANCE,
                                keyGroups,
                                range,
                                env.getTaskKvStateRegistry(),
                                TtlTimeProvider.DEFAULT,
                                new UnregisteredMetricsGroup(),
                                new ArrayList<>(handles),
                                new CloseableRegistry()));
    }

    private static KeyedStateHandle snapshot(TaishanKeyedStateBackend<Integer> backend, long id)
            throws Exception {
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future =
                backend.snapshot(
                        id,
                        id,
                        new MemCheckpointStreamFactory(1 << 20),
                        CheckpointOptions.forCheckpointWithDefaultLocation());
        future.run();
        return future.get().getJobManagerOwnedSnapshot();
    }
}
