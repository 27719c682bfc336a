package io.taishan.kv.server.storage;

/**
 * Where one shard's Bloom filter stands, as the admin CLI shows it (see the proto's FilterStatus
 * for each field).
 */
public record FilterStatus(
        State state,
        long version,
        long memoryBytes,
        long savedBytes,
        double estimatedFpp,
        boolean rebuildRunning,
        boolean rebuildQueued,
        long rebuildKeysScanned,
        long keysAtBuild,
        String reason) {

    public enum State {
        AVAILABLE,
        REBUILDING,
        UNAVAILABLE,
        SAVED,
        EMPTY,
        MISSING
    }
}
