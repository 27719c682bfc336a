package io.taishan.it.harness;

import io.taishan.it.job.JobRecorder;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

/**
 * The MiniCluster every scenario runs on: one TaskManager, slots for the largest parallelism, and a
 * metric reporter through which the job reads its keyed backend's metrics ({@link JobRecorder}).
 */
public final class ItCluster {
    public static final int SLOTS = 4;

    /**
     * One per cluster (a closed one holds no metrics). A metric group belongs to one cluster, so
     * only the reporter of the running cluster knows it.
     */
    private static final List<InMemoryReporter> REPORTERS = new CopyOnWriteArrayList<>();

    static {
        JobRecorder.readMetricsWith(ItCluster::metricsOf);
    }

    private ItCluster() {}

    public static MiniClusterExtension extension() {
        return extension(new Configuration());
    }

    /** With {@code extra} for the cluster, e.g. what the JobManager reads from its own config. */
    public static MiniClusterExtension extension(Configuration extra) {
        Configuration config = new Configuration(extra);
        // RocksDB takes its memory from here; the MiniCluster's default leaves little per slot.
        config.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse("256m"));
        InMemoryReporter reporter = InMemoryReporter.create();
        reporter.addToConfiguration(config);
        REPORTERS.add(reporter);
        return new MiniClusterExtension(
                new MiniClusterResourceConfiguration.Builder()
                        .setNumberTaskManagers(1)
                        .setNumberSlotsPerTaskManager(SLOTS)
                        .setConfiguration(config)
                        .build());
    }

    /** A job's metrics whose identifier matches {@code identifierPattern} (a regex). */
    public static Map<String, Metric> findMetrics(JobID job, String identifierPattern) {
        Map<String, Metric> found = new java.util.HashMap<>();
        for (InMemoryReporter reporter : REPORTERS) {
            found.putAll(reporter.findMetrics(job, identifierPattern));
        }
        return found;
    }

    private static Map<String, Metric> metricsOf(MetricGroup group) {
        for (InMemoryReporter reporter : REPORTERS) {
            Map<String, Metric> metrics = reporter.getMetricsByGroup(group);
            if (!metrics.isEmpty()) {
                return metrics;
            }
        }
        return Map.of();
    }
}
