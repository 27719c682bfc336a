package io.taishan.benchmarks.state;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.Meter;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;

/**
 * The operator metric group given to a keyed backend, keeping every metric it registers under its
 * dotted name relative to the operator ({@code taishan.rpc.get.count}), so the suite reads a
 * backend's own counters the way a metric reporter would, with no hook in the backend.
 */
public final class CapturingMetricGroup extends UnregisteredMetricsGroup {
    private final Map<String, Metric> metrics;
    private final String prefix;

    public CapturingMetricGroup() {
        this(new ConcurrentHashMap<>(), "");
    }

    private CapturingMetricGroup(Map<String, Metric> metrics, String prefix) {
        this.metrics = metrics;
        this.prefix = prefix;
    }

    private <M extends Metric> M keep(String name, M metric) {
        metrics.put(prefix + name, metric);
        return metric;
    }

    @Override
    public Counter counter(String name) {
        return keep(name, new SimpleCounter());
    }

    @Override
    public <C extends Counter> C counter(String name, C counter) {
        return keep(name, counter);
    }

    @Override
    public <T, G extends Gauge<T>> G gauge(String name, G gauge) {
        return keep(name, gauge);
    }

    @Override
    public <M extends Meter> M meter(String name, M meter) {
        return keep(name, meter);
    }

    @Override
    public <H extends Histogram> H histogram(String name, H histogram) {
        return keep(name, histogram);
    }

    @Override
    public MetricGroup addGroup(String name) {
        return new CapturingMetricGroup(metrics, prefix + name + ".");
    }

    @Override
    public MetricGroup addGroup(String key, String value) {
        return addGroup(key).addGroup(value);
    }

    /** Every metric registered so far, by dotted name. */
    public Map<String, Metric> metrics() {
        return Map.copyOf(metrics);
    }

    /** The count of the counter {@code name}, or 0 when none is registered under it. */
    public long count(String name) {
        return metrics.get(name) instanceof Counter counter ? counter.getCount() : 0;
    }
}
