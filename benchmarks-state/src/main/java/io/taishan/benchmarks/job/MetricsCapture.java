package io.taishan.benchmarks.job;

import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/**
 * A metric reporter that keeps the state backends' own metrics of the MiniCluster in this JVM: the
 * Taishan backend's {@code taishan.*} group under each keyed operator (RPCs by kind, the read
 * chain's gauges, the write queue) and the RocksDB backend's native metrics ({@code rocksdb.*}).
 * Named in the configuration by {@link #configure}; Flink finds the factory through {@code
 * META-INF/services}. Reporters see the live metric objects, so a read is always current.
 */
public final class MetricsCapture implements MetricReporter {
    private static final Map<String, Metric> METRICS = new ConcurrentHashMap<>();
    private static final String[] GROUPS = {"taishan", "rocksdb"};

    /** Adds this reporter to a job's configuration. */
    public static void configure(org.apache.flink.configuration.Configuration config) {
        config.setString("metrics.reporter.capture.factory.class", Factory.class.getName());
    }

    /** Found by Flink through {@code META-INF/services}. */
    public static final class Factory implements MetricReporterFactory {
        @Override
        public MetricReporter createMetricReporter(Properties properties) {
            return new MetricsCapture();
        }
    }

    @Override
    public void open(MetricConfig config) {}

    @Override
    public void close() {}

    @Override
    public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
        String[] scope = group.getScopeComponents();
        for (int i = 0; i < scope.length; i++) {
            for (String root : GROUPS) {
                if (scope[i].equals(root)) {
                    StringBuilder path = new StringBuilder();
                    for (int j = i; j < scope.length; j++) {
                        path.append(scope[j]).append('.');
                    }
                    // One entry per subtask and operator; snapshot() sums them by path.
                    METRICS.put(String.join(".", scope) + "." + name + "#" + path + name, metric);
                    return;
                }
            }
        }
        if (name.startsWith("rocksdb.")) {
            METRICS.put(String.join(".", scope) + "." + name + "#" + name, metric);
        }
    }

    // The last values stay readable after the job ended.
    @Override
    public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {}

    /** Every kept counter and numeric gauge, summed by path under its root group. */
    public static Map<String, Double> snapshot() {
        Map<String, Double> values = new TreeMap<>();
        METRICS.forEach(
                (key, metric) -> {
                    String path = key.substring(key.indexOf('#') + 1);
                    double v;
                    if (metric instanceof Counter c) {
                        v = c.getCount();
                    } else if (metric instanceof Gauge<?> g && g.getValue() instanceof Number n) {
                        v = n.doubleValue();
                    } else {
                        return;
                    }
                    values.merge(path, v, Double::sum);
                });
        return values;
    }

    /** Between jobs of one JVM. */
    public static void clear() {
        METRICS.clear();
    }
}
