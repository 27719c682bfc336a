package io.taishan.backend.flink;

import org.apache.flink.runtime.state.metrics.LatencyTrackingStateConfig;
import org.apache.flink.runtime.state.metrics.SizeTrackingStateConfig;

/** The state metrics Flink 2 tracks for a keyed backend: latency and size. */
public final class StateTracking {
    final LatencyTrackingStateConfig latency;
    final SizeTrackingStateConfig size;

    StateTracking(LatencyTrackingStateConfig latency, SizeTrackingStateConfig size) {
        this.latency = latency;
        this.size = size;
    }
}
