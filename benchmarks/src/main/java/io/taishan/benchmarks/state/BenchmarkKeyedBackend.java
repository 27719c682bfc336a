package io.taishan.benchmarks.state;

import io.taishan.backend.TaishanStateBackend;
import io.taishan.benchmarks.kv.ChildKvServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FileUtils;
import org.apache.flink.util.IOUtils;

/**
 * A {@code Long}-keyed backend made the way a task makes it, through {@link
 * StateBackend#createKeyedStateBackend}, with the key groups of Flink's own state benchmarks (two,
 * both owned). For {@link BackendKind#TAISHAN} a kv-server runs in a child JVM, so its RocksDB, GC
 * and JIT are not billed to the measured thread, though it shares the machine's cores.
 */
final class BenchmarkKeyedBackend implements AutoCloseable {
    /** As {@code StateBackendBenchmarkUtils} in Flink: {@code KeyGroupRange(0, 1)}. */
    static final int NUMBER_OF_KEY_GROUPS = 2;

    private final CheckpointableKeyedStateBackend<Long> backend;
    private final CloseableRegistry cancelStreamRegistry;
    @Nullable private final ChildKvServer server;
    @Nullable private final Path serverDir;

    private BenchmarkKeyedBackend(
            CheckpointableKeyedStateBackend<Long> backend,
            CloseableRegistry cancelStreamRegistry,
            @Nullable ChildKvServer server,
            @Nullable Path serverDir) {
        this.backend = backend;
        this.cancelStreamRegistry = cancelStreamRegistry;
        this.server = server;
        this.serverDir = serverDir;
    }

    static BenchmarkKeyedBackend create(BackendKind kind) throws Exception {
        ChildKvServer server = null;
        Path serverDir = null;
        CloseableRegistry registry = new CloseableRegistry();
        try {
            StateBackend stateBackend;
            if (kind == BackendKind.TAISHAN) {
                serverDir = Files.createTempDirectory("taishan-state-bench");
                server =
                        ChildKvServer.start(
                                Files.createDirectories(serverDir.resolve("data")),
                                serverDir.resolve("kv-server.log"));
                stateBackend = new TaishanStateBackend().setKvAddress(server.address());
            } else {
                stateBackend = new HashMapStateBackend();
            }
            CheckpointableKeyedStateBackend<Long> backend =
                    stateBackend.createKeyedStateBackend(
                            new KeyedStateBackendParametersImpl<>(
                                    BenchmarkTaskEnvironment.create(),
                                    new JobID(),
                                    // The form a task gives: <operator>_<OperatorID>_(i/p).
                                    "StateBenchmark_" + new OperatorID() + "_(1/1)",
                                    LongSerializer.INSTANCE,
                                    NUMBER_OF_KEY_GROUPS,
                                    new KeyGroupRange(0, NUMBER_OF_KEY_GROUPS - 1),
                                    null, // no queryable state, as in Flink's benchmarks
                                    TtlTimeProvider.DEFAULT,
                                    new UnregisteredMetricsGroup(),
                                    Collections.emptyList(),
                                    registry));
            return new BenchmarkKeyedBackend(backend, registry, server, serverDir);
        } catch (Exception | Error e) {
            closeAll(null, registry, server, serverDir);
            throw e;
        }
    }

    CheckpointableKeyedStateBackend<Long> backend() {
        return backend;
    }

    @Override
    public void close() throws IOException {
        closeAll(backend, cancelStreamRegistry, server, serverDir);
    }

    private static void closeAll(
            @Nullable CheckpointableKeyedStateBackend<Long> backend,
            CloseableRegistry registry,
            @Nullable ChildKvServer server,
            @Nullable Path serverDir)
            throws IOException {
        if (backend != null) {
            backend.dispose();
            IOUtils.closeQuietly(backend);
        }
        IOUtils.closeQuietly(registry);
        if (server != null) {
            server.close();
        }
        if (serverDir != null) {
            FileUtils.deleteDirectory(serverDir.toFile());
        }
    }
}
