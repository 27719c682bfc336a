package io.taishan.it.harness;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

/** The MiniCluster every scenario runs on: one TaskManager, slots for the largest parallelism. */
public final class ItCluster {
    public static final int SLOTS = 4;

    private ItCluster() {}

    public static MiniClusterExtension extension() {
        Configuration config = new Configuration();
        // RocksDB takes its memory from here; the MiniCluster's default leaves little per slot.
        config.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse("256m"));
        return new MiniClusterExtension(
                new MiniClusterResourceConfiguration.Builder()
                        .setNumberTaskManagers(1)
                        .setNumberSlotsPerTaskManager(SLOTS)
                        .setConfiguration(config)
                        .build());
    }
}
