package io.taishan.benchmarks.rocksdb;

import io.taishan.benchmarks.state.BackendSettings;
import io.taishan.benchmarks.state.BackendUnderTest;
import io.taishan.benchmarks.state.BenchmarkBackendProvider;
import io.taishan.benchmarks.state.StateHome;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackend;
import org.apache.flink.runtime.io.disk.iomanager.IOManager;
import org.apache.flink.runtime.io.disk.iomanager.IOManagerAsync;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.StateBackend;

/**
 * {@code ROCKSDB}: Flink's {@code EmbeddedRocksDBStateBackend} (FRocksDB 6.20.3 on Flink 1.20, 8.10
 * on Flink 2), set up as flink-benchmarks sets it up ({@code StateBackendBenchmarkUtils}): default
 * options, no managed memory (so no shared block cache: each column family has RocksDB's default
 * one), the loaded state compacted before the measurement. Incremental checkpoints, as large-state
 * jobs run it; the suite's restore scenario restores from one. Its files live in the trial's
 * working directory, under {@code /tmp} here.
 */
public final class RocksDbBackendProvider implements BenchmarkBackendProvider {
    public static final String ROCKSDB = "ROCKSDB";

    @Override
    public Set<String> backends() {
        return Set.of(ROCKSDB);
    }

    @Override
    public BackendUnderTest open(String backend, BackendSettings settings) throws Exception {
        Path dbDir = Files.createDirectories(settings.workDir().resolve("rocksdb"));
        EmbeddedRocksDBStateBackend rocksDb = new EmbeddedRocksDBStateBackend(true);
        rocksDb.getMemoryConfiguration().setUseManagedMemory(false);
        rocksDb.setDbStoragePath(dbDir.toString());
        // The builder takes its restore and transfer threads from the task's I/O manager.
        IOManager ioManager =
                new IOManagerAsync(
                        Files.createDirectories(settings.workDir().resolve("io")).toString());
        return new BackendUnderTest() {
            @Override
            public StateBackend stateBackend() {
                return rocksDb;
            }

            @Override
            public String description() {
                return "EmbeddedRocksDBStateBackend (incremental checkpoints, no managed memory,"
                        + " default options) in "
                        + dbDir;
            }

            @Override
            public StateHome stateHome() {
                return StateHome.taskJvm(dbDir);
            }

            @Override
            public Map<String, Object> environment() {
                return Map.of("getIOManager", ioManager);
            }

            @Override
            public void loaded(KeyedStateBackend<Long> backend, StateDescriptor<?, ?> descriptor)
                    throws Exception {
                // As flink-benchmarks: measure reads on compacted files, not on the load's L0. By
                // name: the keyed backend's class moved package in Flink 2, and this provider is
                // compiled for both lines.
                backend.getClass()
                        .getMethod("compactState", StateDescriptor.class)
                        .invoke(backend, descriptor);
            }

            @Override
            public void close() throws Exception {
                ioManager.close();
            }
        };
    }
}
