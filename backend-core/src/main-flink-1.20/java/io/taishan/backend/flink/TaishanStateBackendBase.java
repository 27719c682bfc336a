package io.taishan.backend.flink;

import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.state.AbstractStateBackend;

/** {@code AbstractStateBackend} as Flink 1.20 has it: state metrics configure latency only. */
public abstract class TaishanStateBackendBase extends AbstractStateBackend {
    private static final long serialVersionUID = 1L;

    protected TaishanStateBackendBase() {}

    /** A copy of {@code original} with the state metrics {@code config} sets. */
    protected TaishanStateBackendBase(TaishanStateBackendBase original, ReadableConfig config) {
        this.latencyTrackingConfigBuilder = original.latencyTrackingConfigBuilder.configure(config);
    }

    /** The state metrics of one keyed backend, reported to its operator's group. */
    protected StateTracking stateTracking(MetricGroup metricGroup) {
        return new StateTracking(latencyTrackingConfigBuilder.setMetricGroup(metricGroup).build());
    }
}
