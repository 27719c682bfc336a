package io.taishan.it.harness;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;

/**
 * The backends the scenarios run on, each chosen purely through {@code state.backend.type}, as a
 * user would. RocksDB runs here as a second, independent target: it proves the harness really
 * switches backends and that a canonical savepoint crosses backends.
 */
public final class Backends {
    private Backends() {}

    public static BackendUnderTest hashMap() {
        return new BackendUnderTest(
                "hashmap",
                workDir ->
                        BackendFixture.of(
                                backendType("hashmap"),
                                "org.apache.flink.runtime.state.heap.HeapKeyedStateBackend"));
    }

    /** Incremental checkpoints, so its restores go through a different handle type than HashMap. */
    public static BackendUnderTest rocksDb() {
        return new BackendUnderTest(
                "rocksdb",
                workDir -> {
                    Configuration config = backendType("rocksdb");
                    config.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
                    config.setString("state.backend.rocksdb.localdir", workDir.toString());
                    return BackendFixture.of(
                            config,
                            "org.apache.flink.contrib.streaming.state.RocksDBKeyedStateBackend");
                });
    }

    static Configuration backendType(String type) {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, type);
        return config;
    }
}
