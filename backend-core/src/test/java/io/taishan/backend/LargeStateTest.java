package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import java.util.Arrays;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.RunnableFuture;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.CheckpointStorageLocationReference;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * States far over the old 8 MiB value cap, through the keyed backend against a real kv-server: a
 * {@code ValueState<byte[]>} of 30 MB among small ones, and a {@code ListState} grown by single
 * {@code add}s through the write queue (1,000,000 elements here; 10,000,000 with {@code
 * -Dtaishan.test.listElements=10000000}), each read back whole and exactly, also after a checkpoint
 * and a restore into a new job.
 */
class LargeStateTest {
    private static final int KEY_GROUPS = 4;
    private static final KeyGroupRange ALL = KeyGroupRange.of(0, KEY_GROUPS - 1);
    private static final String OPERATOR = "StreamMap_0a448493b4782967b150582570326228_(1/1)";
    private static final ValueStateDescriptor<byte[]> BLOB =
            new ValueStateDescriptor<>("blob", BytePrimitiveArraySerializer.INSTANCE);
    private static final ListStateDescriptor<Integer> LIST =
            new ListStateDescriptor<>("list", IntSerializer.INSTANCE);

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
    void aValueStateOf30MbRoundTripsAndRestoresExactly() throws Exception {
        byte[] big = random(30_000_004, 30);
        byte[] medium = random(3 << 20, 3);
        TaishanKeyedStateBackend<String> first = create(new JobID(), List.of());
        KeyedStateHandle checkpoint;
        try {
            put(first, "big", big);
            put(first, "medium", medium);
            put(first, "small", new byte[] {1, 2, 3});
            first.writeQueue().flushAndWait();
            // Read back from the server (flushed; too large for the read cache).
            assertThat(Arrays.equals(get(first, "big"), big)).isTrue();
            assertThat(Arrays.equals(get(first, "medium"), medium)).isTrue();
            assertThat(get(first, "small")).containsExactly(1, 2, 3);
            checkpoint = snapshot(first, 1);
            put(first, "big", random(31_000_000, 31));
            first.writeQueue().flushAndWait();
            assertThat(get(first, "big")).hasSize(31_000_000);
        } finally {
            first.dispose();
        }
        TaishanKeyedStateBackend<String> restored = create(new JobID(), List.of(checkpoint));
        try {
            assertThat(Arrays.equals(get(restored, "big"), big)).isTrue();
            assertThat(Arrays.equals(get(restored, "medium"), medium)).isTrue();
            assertThat(get(restored, "small")).containsExactly(1, 2, 3);
        } finally {
            restored.dispose();
        }
    }

    @Test
    void aListStateOfMillionsOfElementsAddedOneByOneIsReadWholeAndRestoresExactly()
            throws Exception {
        int elements = Integer.getInteger("taishan.test.listElements", 1_000_000);
        TaishanKeyedStateBackend<String> first = create(new JobID(), List.of());
        KeyedStateHandle checkpoint;
        try {
            first.setCurrentKey("k");
            ListState<Integer> list = list(first);
            long start = System.nanoTime();
            for (int i = 0; i < elements; i++) {
                list.add(i);
            }
            first.writeQueue().flushAndWait();
            long added = System.nanoTime();
            assertElements(list.get(), elements);
            long read = System.nanoTime();
            System.out.printf(
                    "LargeStateTest: %,d adds in %.1f s, get() of %,d elements in %.1f s%n",
                    elements, (added - start) / 1e9, elements, (read - added) / 1e9);
            checkpoint = snapshot(first, 1);
            list.add(-1);
            first.writeQueue().flushAndWait();
        } finally {
            first.dispose();
        }
        TaishanKeyedStateBackend<String> restored = create(new JobID(), List.of(checkpoint));
        try {
            restored.setCurrentKey("k");
            assertElements(list(restored).get(), elements);
        } finally {
            restored.dispose();
        }
    }

    private static void assertElements(Iterable<Integer> got, int elements) {
        Iterator<Integer> it = got.iterator();
        for (int i = 0; i < elements; i++) {
            assertThat(it.hasNext()).as("element %d of %d", i, elements).isTrue();
            int e = it.next();
            if (e != i) {
                assertThat(e).as("element %d", i).isEqualTo(i);
            }
        }
        assertThat(it.hasNext()).isFalse();
    }

    private static ListState<Integer> list(TaishanKeyedStateBackend<String> backend)
            throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, LIST);
    }

    private static void put(TaishanKeyedStateBackend<String> backend, String key, byte[] value)
            throws Exception {
        backend.setCurrentKey(key);
        blob(backend).update(value);
    }

    private static byte[] get(TaishanKeyedStateBackend<String> backend, String key)
            throws Exception {
        backend.setCurrentKey(key);
        return blob(backend).value();
    }

    private static ValueState<byte[]> blob(TaishanKeyedStateBackend<String> backend)
            throws Exception {
        return backend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, BLOB);
    }

    private static TaishanKeyedStateBackend<String> create(
            JobID job, Collection<KeyedStateHandle> handles) throws Exception {
        TaishanStateBackend backend = new TaishanStateBackend().setKvAddress(server.address());
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

    private static KeyedStateHandle snapshot(TaishanKeyedStateBackend<String> backend, long id)
            throws Exception {
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future =
                backend.snapshot(
                        id,
                        id,
                        new MemCheckpointStreamFactory(1 << 20),
                        new CheckpointOptions(
                                CheckpointType.CHECKPOINT,
                                CheckpointStorageLocationReference.getDefault()));
        future.run();
        return future.get().getJobManagerOwnedSnapshot();
    }

    private static byte[] random(int size, long seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }
}
