package io.taishan.benchmarks.flink2;

import io.taishan.benchmarks.job.JobBackend;
import io.taishan.benchmarks.job.TaishanJobBackend;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.configuration.Configuration;

/**
 * {@code TAISHAN_ASYNC}: {@code TAISHAN} with Flink SQL's asynchronous state on ({@code
 * table.exec.async-state.enabled}), so the operators that have an async version (joins, group
 * aggregates without data views, top-1 and append-only top-N, row-time deduplication, window
 * aggregates and window joins) run on Taishan's asynchronous backend and its batched reads.
 */
public final class AsyncTaishanJobBackend implements JobBackend.Provider {
    public static final String TAISHAN_ASYNC = "TAISHAN_ASYNC";
    static final String ASYNC_STATE = "table.exec.async-state.enabled";

    @Override
    public Set<String> backends() {
        return Set.of(TAISHAN_ASYNC);
    }

    @Override
    public JobBackend open(
            String backend, Path workDir, Map<String, String> serverConfig, boolean sampleStore)
            throws Exception {
        JobBackend taishan =
                new TaishanJobBackend()
                        .open(TaishanJobBackend.TAISHAN, workDir, serverConfig, sampleStore);
        return new JobBackend() {
            @Override
            public Configuration configuration() {
                Configuration config = taishan.configuration();
                config.setString(ASYNC_STATE, "true");
                return config;
            }

            @Override
            public String description() {
                return taishan.description() + ", SQL async state on";
            }

            @Override
            public List<StoreSample> storeSamples() {
                return taishan.storeSamples();
            }

            @Override
            public long serverPid() {
                return taishan.serverPid();
            }

            @Override
            public void close() throws Exception {
                taishan.close();
            }
        };
    }
}
