package io.taishan.benchmarks.flink2.rocksdb;

import io.taishan.benchmarks.state.BackendSettings;
import io.taishan.benchmarks.state.BackendUnderTest;
import io.taishan.benchmarks.state.BenchmarkBackendProvider;
import io.taishan.benchmarks.state.StateHome;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.io.disk.iomanager.IOManager;
import org.apache.flink.runtime.io.disk.iomanager.IOManagerAsync;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.state.forst.ForStStateBackend;

/**
 * {@code FORST}: Flink 2's {@code ForStStateBackend} for the state suite, set up as the suite sets
 * up RocksDB: its files on the local disk (primary directory {@code local-dir}: this suite measures
 * reads, not the remote file system under them, and RocksDB's files are local too), default
 * options, no managed memory. Operators with asynchronous state get its asynchronous keyed backend
 * (its own I/O threads serving each batch); the synchronous benchmarks get its synchronous one.
 */
public final class ForStBackendProvider implements BenchmarkBackendProvider {
    public static final String FORST = "FORST";

    @Override
    public Set<String> backends() {
        return Set.of(FORST);
    }

    @Override
    public BackendUnderTest open(String backend, BackendSettings settings) throws Exception {
        Path dbDir = Files.createDirectories(settings.workDir().resolve("forst"));
        Configuration config = new Configuration();
        config.setString("state.backend.forst.local-dir", dbDir.toString());
        config.setString("state.backend.forst.primary-dir", "local-dir");
        config.setString("state.backend.forst.memory.managed", "false");
        ForStStateBackend forSt =
                new ForStStateBackend().configure(config, getClass().getClassLoader());
        IOManager ioManager =
                new IOManagerAsync(
                        Files.createDirectories(settings.workDir().resolve("io")).toString());
        // A task's pool for asynchronous checkpoint parts, which ForSt's builder asks for.
        ExecutorService asyncOperations = Executors.newCachedThreadPool();
        // Where its checkpoints would go: its builder asks the task's checkpoint storage.
        CheckpointStorageAccess checkpointStorage =
                new FileSystemCheckpointStorage(
                                settings.workDir().resolve("forst-checkpoints").toUri())
                        .createCheckpointStorage(new JobID());
        return new BackendUnderTest() {
            @Override
            public StateBackend stateBackend() {
                return forSt;
            }

            @Override
            public String description() {
                return "ForStStateBackend (files on the local disk, no managed memory, default"
                        + " options) in "
                        + dbDir;
            }

            @Override
            public StateHome stateHome() {
                return StateHome.taskJvm(dbDir);
            }

            @Override
            public Map<String, Object> environment() {
                return Map.of(
                        "getIOManager",
                        ioManager,
                        "getAsyncOperationsThreadPool",
                        asyncOperations,
                        "getCheckpointStorageAccess",
                        checkpointStorage,
                        // ForSt names its directories after the task.
                        "getTaskInfo",
                        new TaskInfoImpl("StateBenchmark", 128, 0, 1, 0));
            }

            @Override
            public void close() throws Exception {
                asyncOperations.shutdownNow();
                ioManager.close();
            }
        };
    }
}
