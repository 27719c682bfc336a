package io.taishan.it.job;

import java.util.Map;

/**
 * What one subtask of the stateful operator saw when it opened: after its keyed backend was built
 * and restored, before any record or timer. {@code metrics} are those of the Taishan backend (the
 * operator's {@code taishan} metric group, as a reporter saw them), empty for other backends.
 */
public record OpenedSubtask(int subtask, int keyGroups, Map<String, Long> metrics) {
    /** Gauges and counters read, in this order: the pending ops before the sent ones. */
    static final String[] TAISHAN_METRICS = {
        "writeQueueOps",
        "writeOps",
        "restoreMillis",
        "restoredShards",
        "openedShards",
        "restoreDownloadedBytes"
    };

    /** Ops the backend wrote (sent or still queued) while it was built and restored. */
    public long restoreWrites() {
        return metric("writeQueueOps") + metric("writeOps");
    }

    /** Shards cloned from another job's snapshots or rolled back to this job's. */
    public long shardsFromSnapshots() {
        return metric("restoredShards");
    }

    /** Shards leased with no snapshot to start from. */
    public long shardsOpened() {
        return metric("openedShards");
    }

    /** Bytes the kv-server nodes downloaded from checkpoint storage for the restore. */
    public long downloadedBytes() {
        return metric("restoreDownloadedBytes");
    }

    public long restoreMillis() {
        return metric("restoreMillis");
    }

    public boolean hasTaishanMetrics() {
        return metrics.keySet().containsAll(java.util.List.of(TAISHAN_METRICS));
    }

    private long metric(String name) {
        Long value = metrics.get(name);
        if (value == null) {
            throw new IllegalStateException(
                    "subtask " + subtask + " reported no metric " + name + ": " + metrics);
        }
        return value;
    }
}
