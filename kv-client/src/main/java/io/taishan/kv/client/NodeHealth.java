package io.taishan.kv.client;

/**
 * What one node reported on its health RPC.
 *
 * @param filterBytes off-heap bytes of every Bloom filter on the node (live, rebuilding, copies
 *     being saved or sent)
 * @param filterLimitBytes the node's limit for live and rebuilding filters
 * @param filterRebuilds filter rebuilds running or queued
 */
public record NodeHealth(
        String address,
        int nodeIndex,
        String status,
        int openShards,
        int tables,
        long uptimeMillis,
        String version,
        long filterBytes,
        long filterLimitBytes,
        int filterRebuilds) {

    public NodeHealth(
            String address,
            int nodeIndex,
            String status,
            int openShards,
            int tables,
            long uptimeMillis,
            String version) {
        this(address, nodeIndex, status, openShards, tables, uptimeMillis, version, 0, 0, 0);
    }

    public boolean isServing() {
        return "SERVING".equals(status);
    }
}
