package io.taishan.benchmarks.job;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;

/** {@code HASHMAP}: Flink's {@code HashMapStateBackend}, state and timers on the task heap. */
public final class HashMapJobBackend implements JobBackend.Provider {
    public static final String HASHMAP = "HASHMAP";

    @Override
    public Set<String> backends() {
        return Set.of(HASHMAP);
    }

    @Override
    public JobBackend open(
            String backend, Path workDir, Map<String, String> serverConfig, boolean sampleStore) {
        return new JobBackend() {
            @Override
            public Configuration configuration() {
                Configuration config = new Configuration();
                config.set(StateBackendOptions.STATE_BACKEND, "hashmap");
                return config;
            }

            @Override
            public String description() {
                return "HashMapStateBackend (state and timers on the heap)";
            }

            @Override
            public void close() {}
        };
    }
}
