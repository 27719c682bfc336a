package io.taishan.benchmarks.flink2.rocksdb;

import io.taishan.benchmarks.job.JobBackend;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;

/**
 * {@code FORST}: Flink 2's disaggregated backend ({@code state.backend.type: forst}) as its
 * documentation sets it up for SQL: asynchronous state on ({@code table.exec.async-state.enabled}),
 * its SST files in the checkpoint directory (its default primary directory, here a local file
 * system standing in for the remote one), a local file cache beside its working files, ForSt
 * timers, and managed memory for its block cache and write buffers. Operators without an async
 * version run on ForSt's synchronous backend with local state ({@code
 * state.backend.forst.sync.enforce-local}, its default).
 */
public final class ForStJobBackend implements JobBackend.Provider {
    public static final String FORST = "FORST";

    @Override
    public Set<String> backends() {
        return Set.of(FORST);
    }

    @Override
    public JobBackend open(
            String backend, Path workDir, Map<String, String> serverConfig, boolean sampleStore)
            throws IOException {
        Path local = Files.createDirectories(workDir.resolve("forst"));
        Path cache = Files.createDirectories(workDir.resolve("forst-cache"));
        return new JobBackend() {
            @Override
            public Configuration configuration() {
                Configuration config = new Configuration();
                config.set(StateBackendOptions.STATE_BACKEND, "forst");
                config.setString("table.exec.async-state.enabled", "true");
                config.setString("state.backend.forst.local-dir", local.toString());
                config.setString("state.backend.forst.cache.dir", cache.toString());
                config.setString("state.backend.forst.cache.size-based-limit", "1gb");
                config.setString("state.backend.forst.timer-service.factory", "ForStDB");
                config.setString("state.backend.forst.memory.managed", "true");
                return config;
            }

            @Override
            public String description() {
                return "ForStStateBackend (async state on; SST files in the checkpoint directory,"
                        + " a local file cache of up to 1 GiB in "
                        + cache
                        + ", ForSt timers, managed memory)";
            }

            @Override
            public void close() {}
        };
    }
}
