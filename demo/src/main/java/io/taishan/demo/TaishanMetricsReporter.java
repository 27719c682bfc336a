package io.taishan.demo;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * Keeps the Taishan backend's own metrics (its {@code taishan} group under each keyed operator) per
 * job, for the story: the restore time each subtask measured, and the RPCs by kind. Flink finds the
 * factory on the class path (META-INF/services) when the configuration names it.
 */
public final class TaishanMetricsReporter implements MetricReporter {
    private static final String JOB_ID = "<job_id>";
    private static final String SUBTASK = "<subtask_index>";

    private static final Map<String, Map<Integer, Gauge<?>>> RESTORE_MILLIS =
            new ConcurrentHashMap<>();
    private static final Map<String, Map<String, List<Counter>>> RPC_COUNTS =
            new ConcurrentHashMap<>();

    /** Named in the configuration as {@code metrics.reporter.<name>.factory.class}. */
    public static final class Factory implements MetricReporterFactory {
        @Override
        public MetricReporter createMetricReporter(Properties properties) {
            return new TaishanMetricsReporter();
        }
    }

    @Override
    public void open(MetricConfig config) {}

    @Override
    public void close() {}

    @Override
    public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
        String[] scope = group.getScopeComponents();
        String jobId = group.getAllVariables().get(JOB_ID);
        if (jobId == null || scope.length == 0) {
            return;
        }
        if (name.equals("restoreMillis") && metric instanceof Gauge<?> gauge) {
            int subtask = Integer.parseInt(group.getAllVariables().get(SUBTASK));
            RESTORE_MILLIS
                    .computeIfAbsent(jobId, j -> new ConcurrentHashMap<>())
                    .put(subtask, gauge);
        } else if (name.equals("count")
                && metric instanceof Counter counter
                && scope.length >= 3
                && scope[scope.length - 2].equals("rpc")
                && scope[scope.length - 3].equals("taishan")) {
            RPC_COUNTS
                    .computeIfAbsent(jobId, j -> new ConcurrentHashMap<>())
                    .computeIfAbsent(scope[scope.length - 1], k -> new CopyOnWriteArrayList<>())
                    .add(counter);
        }
    }

    // The last values stay readable: the story reads them after the job has ended.
    @Override
    public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {}

    /** Restore time per subtask, as the backend measured it, in subtask order. */
    static Map<Integer, Long> restoreMillis(String jobId) {
        return RESTORE_MILLIS.getOrDefault(jobId, Map.of()).entrySet().stream()
                .collect(
                        Collectors.toMap(
                                Map.Entry::getKey,
                                e -> ((Number) e.getValue().getValue()).longValue(),
                                (a, b) -> a,
                                java.util.TreeMap::new));
    }

    /** RPCs the backend made, by kind, summed over the subtasks; kinds never called left out. */
    static Map<String, Long> rpcCounts(String jobId) {
        return RPC_COUNTS.getOrDefault(jobId, Map.of()).entrySet().stream()
                .map(
                        e ->
                                Map.entry(
                                        e.getKey(),
                                        e.getValue().stream().mapToLong(Counter::getCount).sum()))
                .filter(e -> e.getValue() > 0)
                .collect(
                        Collectors.toMap(
                                Map.Entry::getKey,
                                Map.Entry::getValue,
                                (a, b) -> a,
                                java.util.TreeMap::new));
    }
}
