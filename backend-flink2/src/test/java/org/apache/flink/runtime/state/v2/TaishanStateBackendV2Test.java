package org.apache.flink.runtime.state.v2;

import io.taishan.backend.TaishanOptions;
import io.taishan.backend.TaishanStateBackend;
import io.taishan.kv.server.EmbeddedKvServer;
import java.util.List;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStorage;
import org.apache.flink.runtime.state.ConfigurableStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameter;
import org.apache.flink.testutils.junit.extensions.parameterized.ParameterizedTestExtension;
import org.apache.flink.testutils.junit.extensions.parameterized.Parameters;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Flink's conformance suite for asynchronous keyed backends (State V2) against Taishan's and a real
 * kv-server on loopback: snapshots, restores at other parallelisms, timers, TTL. In Flink's
 * package, as its tests are package-private.
 */
@ExtendWith(ParameterizedTestExtension.class)
public class TaishanStateBackendV2Test extends StateBackendTestV2Base<TaishanStateBackend> {
    private static EmbeddedKvServer server;

    /** The read cache: with none, every read of a batch is fetched. */
    @Parameter public String cacheType;

    @Parameters(name = "cache={0}")
    public static List<String> caches() {
        return List.of("off-heap", "none");
    }

    @BeforeAll
    static void startServer() {
        server = EmbeddedKvServer.start();
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Override
    protected ConfigurableStateBackend getStateBackend() {
        Configuration config = new Configuration();
        config.set(TaishanOptions.CACHE_TYPE, cacheType);
        return new TaishanStateBackend()
                .setKvAddress(server.address())
                .configure(config, getClass().getClassLoader());
    }

    /**
     * The suite's maximum parallelism. Its backends are made with as many key groups as their own
     * range holds, where Flink's jobs give every subtask the maximum parallelism; Taishan keeps an
     * operator's key groups as the shards of one table, so it needs the real count.
     */
    private static final int SUITE_MAX_PARALLELISM = 10;

    @Override
    protected <K> AsyncKeyedStateBackend<K> createAsyncKeyedBackend(
            int subtask,
            int parallelism,
            TypeSerializer<K> keySerializer,
            KeyGroupRange keyGroupRange,
            Environment env)
            throws Exception {
        env.setCheckpointStorageAccess(getCheckpointStorageAccess());
        return restoreAsyncKeyedBackend(
                subtask, parallelism, keySerializer, keyGroupRange, List.of(), env);
    }

    @Override
    protected <K> AsyncKeyedStateBackend<K> restoreAsyncKeyedBackend(
            int subtask,
            int parallelism,
            TypeSerializer<K> keySerializer,
            KeyGroupRange keyGroupRange,
            List<KeyedStateHandle> state,
            Environment env)
            throws Exception {
        return getStateBackend()
                .createAsyncKeyedStateBackend(
                        new KeyedStateBackendParametersImpl<>(
                                env,
                                jobID,
                                String.format("test_op_%d_%d", subtask, parallelism),
                                keySerializer,
                                Math.max(SUITE_MAX_PARALLELISM, keyGroupRange.getEndKeyGroup() + 1),
                                keyGroupRange,
                                env.getTaskKvStateRegistry(),
                                TtlTimeProvider.DEFAULT,
                                getMetricGroup(),
                                getCustomInitializationMetrics(),
                                state,
                                new CloseableRegistry(),
                                1.0d));
    }

    @Override
    protected CheckpointStorage getCheckpointStorage() {
        return new JobManagerCheckpointStorage();
    }

    @Override
    protected void restoreJob() {
        // Nothing to reset: a restore re-points shards by the handles' manifests.
    }
}
