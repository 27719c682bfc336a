package io.taishan.backend.flink;

import io.taishan.backend.TaishanKeyedStateBackend;
import io.taishan.backend.async.TaishanAsyncKeyedStateBackend;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.state.AbstractStateBackend;
import org.apache.flink.runtime.state.AsyncKeyedStateBackend;

/**
 * {@code AbstractStateBackend} as Flink 2 has it: state metrics configure latency and size tracking
 * ({@code state.size-track.*}), as Flink's {@code HashMapStateBackend} does; an operator with
 * asynchronous state gets a {@link TaishanAsyncKeyedStateBackend} over the synchronous keyed
 * backend, unless {@code taishan.async-state.batched-reads} is off (then Flink's adaptor serves it,
 * one request at a time).
 */
public abstract class TaishanStateBackendBase extends AbstractStateBackend {
    private static final long serialVersionUID = 1L;

    protected TaishanStateBackendBase() {}

    /** A copy of {@code original} with the state metrics {@code config} sets. */
    protected TaishanStateBackendBase(TaishanStateBackendBase original, ReadableConfig config) {
        this.latencyTrackingConfigBuilder = original.latencyTrackingConfigBuilder.configure(config);
        this.sizeTrackingConfigBuilder = original.sizeTrackingConfigBuilder.configure(config);
    }

    /** Whether operators with asynchronous state get {@link TaishanAsyncKeyedStateBackend}. */
    protected abstract boolean asyncStateBatchedReads();

    @Override
    public boolean supportsAsyncKeyedStateBackend() {
        return asyncStateBatchedReads();
    }

    @Override
    public <K> AsyncKeyedStateBackend<K> createAsyncKeyedStateBackend(
            KeyedStateBackendParameters<K> parameters) throws Exception {
        return new TaishanAsyncKeyedStateBackend<>(
                (TaishanKeyedStateBackend<K>) createKeyedStateBackend(parameters));
    }

    /** The state metrics of one keyed backend, reported to its operator's group. */
    protected StateTracking stateTracking(MetricGroup metricGroup) {
        return new StateTracking(
                latencyTrackingConfigBuilder.setMetricGroup(metricGroup).build(),
                sizeTrackingConfigBuilder.setMetricGroup(metricGroup).build());
    }
}
