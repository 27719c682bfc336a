package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.RunnableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Threads that outlive a job never keep its user-code class loader: a task thread's context class
 * loader is its job's, and every thread started on its behalf (the shared client's event loops,
 * callbacks and timers, the write flusher, housekeeping, the local cache tier's flusher) would
 * inherit it, pinning the job's classes after it ends and failing later jobs' logging with "Trying
 * to access closed classloader".
 */
class JobClassLoaderTest {

    @Test
    void noThreadStartedForAJobKeepsItsClassLoader(@TempDir Path localCache) throws Exception {
        try (EmbeddedKvServer server = EmbeddedKvServer.start();
                MockEnvironment env = MockEnvironment.builder().build();
                URLClassLoader jobLoader =
                        new URLClassLoader(new URL[0], getClass().getClassLoader())) {
            TaishanStateBackend backend =
                    new TaishanStateBackend()
                            .setKvAddress(server.address())
                            .setCacheType("off-heap")
                            .setCacheSize(MemorySize.parse("1mb"))
                            .setLocalCache(localCache.toString(), MemorySize.parse("4mb"));
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread task =
                    new Thread(
                            () -> {
                                try {
                                    runAJob(backend, env);
                                } catch (Throwable t) {
                                    failure.set(t);
                                }
                            },
                            "task thread of a job");
            task.setContextClassLoader(jobLoader);
            task.start();
            task.join();
            assertThat(failure.get()).isNull();

            List<String> holding =
                    Thread.getAllStackTraces().keySet().stream()
                            .filter(t -> t.isAlive() && t.getContextClassLoader() == jobLoader)
                            .map(Thread::getName)
                            .toList();
            assertThat(holding).as("live threads holding the job's class loader").isEmpty();
        }
    }

    /** What a subtask does: state of two kinds, enough writes to flush, reads, a checkpoint. */
    private static void runAJob(TaishanStateBackend factory, MockEnvironment env) throws Exception {
        TaishanKeyedStateBackend<String> backend =
                DurableBackends.keyed(factory, env, new JobID(), List.of());
        try {
            ValueState<Long> value =
                    backend.getPartitionedState(
                            VoidNamespace.INSTANCE,
                            VoidNamespaceSerializer.INSTANCE,
                            new ValueStateDescriptor<>("v", LongSerializer.INSTANCE));
            MapState<Integer, Long> map =
                    backend.getPartitionedState(
                            VoidNamespace.INSTANCE,
                            VoidNamespaceSerializer.INSTANCE,
                            new MapStateDescriptor<>(
                                    "m", IntSerializer.INSTANCE, LongSerializer.INSTANCE));
            for (int key = 0; key < 20_000; key++) {
                backend.setCurrentKey("k" + key);
                value.update((long) key);
                map.put(key % 7, (long) key);
            }
            for (int key = 0; key < 20_000; key += 7) {
                backend.setCurrentKey("k" + key);
                assertThat(value.value()).isEqualTo(key);
                assertThat(map.contains(key % 7)).isTrue();
            }
            RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot =
                    backend.snapshot(
                            1,
                            1,
                            new MemCheckpointStreamFactory(4 << 20),
                            CheckpointOptions.forCheckpointWithDefaultLocation());
            snapshot.run();
            snapshot.get();
            backend.notifyCheckpointComplete(1);
        } finally {
            backend.dispose();
        }
    }
}
