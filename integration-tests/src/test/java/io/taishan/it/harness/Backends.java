package io.taishan.it.harness;

import java.util.Set;
import java.util.stream.Stream;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;

/**
 * The backends the scenarios run on, each chosen purely through {@code state.backend.type}, as a
 * user would. RocksDB runs here as a second, independent target: it proves the harness really
 * switches backends and that a canonical savepoint crosses backends.
 */
public final class Backends {
    /** Runs only the named parameters (comma-separated), e.g. {@code -Dit.backends=taishan}. */
    public static final String SELECTION_PROPERTY = "it.backends";

    private Backends() {}

    /** The given parameters, or those of them that {@value #SELECTION_PROPERTY} names. */
    public static Stream<BackendUnderTest> selected(Stream<BackendUnderTest> all) {
        String selection = System.getProperty(SELECTION_PROPERTY, "").trim();
        if (selection.isEmpty()) {
            return all;
        }
        Set<String> names = Set.of(selection.split("\\s*,\\s*"));
        return all.filter(backend -> names.contains(backend.name()));
    }

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
