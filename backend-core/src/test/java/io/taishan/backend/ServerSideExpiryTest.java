package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Expired TTL'd state leaves the kv-server without being read: the backend registers its TTL'd
 * value, map and list states and reports its TTL clock (a fake one here), the server sweeps. State
 * without TTL, and live values, stay.
 */
class ServerSideExpiryTest {
    private static final Duration TTL = Duration.ofSeconds(10);
    private static final int KEYS = 200;

    private static EmbeddedKvServer server;
    private static MockEnvironment env;

    @BeforeAll
    static void start() {
        server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder().ttlSweepInterval(Duration.ofMillis(50)).build());
        env = MockEnvironment.builder().build();
    }

    @AfterAll
    static void stop() throws Exception {
        env.close();
        server.close();
    }

    @Test
    void expiredEntriesOfEveryKindLeaveTheStoreUnreadAndTheRestStays() throws Exception {
        AtomicLong clock = new AtomicLong(1_000_000);
        StateTtlConfig ttl =
                StateTtlConfig.newBuilder(TTL)
                        .setUpdateType(StateTtlConfig.UpdateType.OnCreateAndWrite)
                        .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
                        .build();
        ValueStateDescriptor<Long> value = new ValueStateDescriptor<>("v", LongSerializer.INSTANCE);
        value.enableTimeToLive(ttl);
        MapStateDescriptor<Integer, Long> map =
                new MapStateDescriptor<>("m", IntSerializer.INSTANCE, LongSerializer.INSTANCE);
        map.enableTimeToLive(ttl);
        ListStateDescriptor<Long> list = new ListStateDescriptor<>("l", LongSerializer.INSTANCE);
        list.enableTimeToLive(ttl);
        ValueStateDescriptor<Long> plain =
                new ValueStateDescriptor<>("plain", LongSerializer.INSTANCE);

        TaishanKeyedStateBackend<Integer> backend = create(clock::get);
        try {
            for (int key = 0; key < KEYS; key++) {
                backend.setCurrentKey(key);
                state(backend, value).update((long) key);
                MapState<Integer, Long> m =
                        backend.getPartitionedState(
                                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, map);
                m.put(1, 1L);
                m.put(2, 2L);
                ListState<Long> l =
                        backend.getPartitionedState(
                                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, list);
                l.add(1L);
                l.add(2L);
                state(backend, plain).update((long) key);
            }
            // Half the keys are written again later: they must outlive the others.
            clock.addAndGet(TTL.toMillis() / 2);
            for (int key = 0; key < KEYS; key += 2) {
                backend.setCurrentKey(key);
                state(backend, value).update(-1L);
            }
            int entries = KEYS * (1 + 2 + 1 + 1);
            assertThat(backend.numKeyValueStateEntries()).isEqualTo(entries);

            clock.addAndGet(TTL.toMillis() / 2 + 1);
            // Expected: every map entry and list, the value of the keys not rewritten; the
            // plain state and the rewritten values stay.
            awaitEntries(backend, KEYS + KEYS / 2);

            for (int key = 0; key < KEYS; key++) {
                backend.setCurrentKey(key);
                assertThat(state(backend, plain).value()).isEqualTo(key);
                assertThat(state(backend, value).value()).isEqualTo(key % 2 == 0 ? -1L : null);
            }
        } finally {
            backend.dispose();
        }
    }

    private static void awaitEntries(TaishanKeyedStateBackend<Integer> backend, int expected)
            throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        int now;
        while ((now = backend.numKeyValueStateEntries()) != expected) {
            assertThat(System.nanoTime())
                    .as("%d entries left within 20 s (%d now)", expected, now)
                    .isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    private static ValueState<Long> state(
            TaishanKeyedStateBackend<Integer> backend, ValueStateDescriptor<Long> descriptor)
            throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
    }

    @SuppressWarnings("unchecked")
    private static TaishanKeyedStateBackend<Integer> create(TtlTimeProvider clock)
            throws Exception {
        TaishanStateBackend factory =
                new TaishanStateBackend()
                        .setKvAddress(server.address())
                        .setTtlClockReportInterval(Duration.ofMillis(20));
        return (TaishanKeyedStateBackend<Integer>)
                factory.createKeyedStateBackend(
                        new KeyedStateBackendParametersImpl<>(
                                env,
                                new JobID(),
                                "expiry_op",
                                IntSerializer.INSTANCE,
                                8,
                                new KeyGroupRange(0, 7),
                                env.getTaskKvStateRegistry(),
                                clock,
                                new UnregisteredMetricsGroup(),
                                List.of(),
                                new CloseableRegistry()));
    }
}
