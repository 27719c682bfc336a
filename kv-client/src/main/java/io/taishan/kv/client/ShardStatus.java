package io.taishan.kv.client;

/**
 * What a node reports about one shard it owns ({@link KvStore.Admin#describeShards}): its epoch,
 * whether it is open, and its Bloom filter's state.
 *
 * @param epoch 0 if the shard was never opened
 * @param open whether its RocksDB instance (and so its filter) is in memory
 * @param filterVersion of the filter in memory when {@link FilterState#AVAILABLE}, else 0
 * @param filterMemoryBytes off-heap bytes held for the shard now (two filters while rebuilding)
 * @param filterSavedBytes size of the filter saved beside the live data, 0 if none
 * @param estimatedFpp the modelled false-positive rate of the filter in memory, 0 without one
 * @param rebuildRunning a rebuild scans the shard now (also while available: a refresh)
 * @param rebuildQueued a rebuild waits for a rebuild thread
 * @param rebuildKeysScanned keys the running rebuild has scanned so far
 * @param keysAtBuild keys the current filter's build scanned (0 if never rebuilt)
 * @param reason why the filter is not available, empty when it is
 * @param lastActiveMillis when the shard was last leased, written or had its TTL clock reported
 *     (epoch millis; reads do not count), 0 if never, -1 if the server does not tell
 */
public record ShardStatus(
        String table,
        int shard,
        long epoch,
        boolean open,
        FilterState filterState,
        long filterVersion,
        long filterMemoryBytes,
        long filterSavedBytes,
        double estimatedFpp,
        boolean rebuildRunning,
        boolean rebuildQueued,
        long rebuildKeysScanned,
        long keysAtBuild,
        String reason,
        long lastActiveMillis) {

    /** Where a shard's filter stands. */
    public enum FilterState {
        /** Open, and its filter can be fetched. */
        AVAILABLE,
        /** Open; its filter can be fetched once the running rebuild finishes. */
        REBUILDING,
        /** Open without a filter: a rebuild is queued or waits for filter memory. */
        UNAVAILABLE,
        /** Closed; its filter is saved beside the live data and loaded when it opens. */
        SAVED,
        /** Closed with no data; an empty filter is created when it opens. */
        EMPTY,
        /** Closed with data but no saved filter: rebuilt when it opens. */
        MISSING,
        /** A state this client version does not know. */
        UNKNOWN
    }
}
