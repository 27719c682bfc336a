package io.taishan.benchmarks.rocksdb;

import io.taishan.benchmarks.job.JobBackend;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;

/**
 * {@code ROCKSDB} for the MiniCluster jobs of issue 8: Flink's {@code EmbeddedRocksDBStateBackend}
 * with RocksDB timers ({@code state.backend.rocksdb.timer-service.factory: ROCKSDB}, the default),
 * managed memory on (its block cache and write buffers in the slot's managed memory), files under
 * the run's working directory, and the native {@code estimate-num-keys} metric, so the SQL run can
 * show what RocksDB reports it holds.
 */
public final class RocksDbJobBackend implements JobBackend.Provider {
    public static final String ROCKSDB = "ROCKSDB";

    @Override
    public Set<String> backends() {
        return Set.of(ROCKSDB);
    }

    @Override
    public JobBackend open(
            String backend, Path workDir, Map<String, String> serverConfig, boolean sampleStore)
            throws IOException {
        Path dir = Files.createDirectories(workDir.resolve("rocksdb"));
        return new JobBackend() {
            @Override
            public Configuration configuration() {
                Configuration config = new Configuration();
                config.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
                config.setString("state.backend.rocksdb.timer-service.factory", "ROCKSDB");
                config.setString("state.backend.rocksdb.localdir", dir.toString());
                config.setString("state.backend.rocksdb.memory.managed", "true");
                config.setString("state.backend.rocksdb.metrics.estimate-num-keys", "true");
                return config;
            }

            @Override
            public String description() {
                return "EmbeddedRocksDBStateBackend (RocksDB timers, managed memory, default"
                        + " options, files in "
                        + dir
                        + ")";
            }

            @Override
            public void close() {}
        };
    }
}
