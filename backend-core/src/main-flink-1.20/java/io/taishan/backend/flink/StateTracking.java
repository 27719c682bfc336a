package io.taishan.backend.flink;

import org.apache.flink.runtime.state.metrics.LatencyTrackingStateConfig;

/** The state metrics Flink 1.20 tracks for a keyed backend: latency only. */
public final class StateTracking {
    final LatencyTrackingStateConfig latency;

    StateTracking(LatencyTrackingStateConfig latency) {
        this.latency = latency;
    }
}
