package io.taishan.kv.client;

/**
 * What one node reported on its health RPC.
 *
 * @param name the node's name in the cluster (the client's, for a node that did not answer)
 * @param nodeIndex its position in the cluster's nodes by name
 * @param filterBytes off-heap bytes of every Bloom filter on the node (live, rebuilding, copies
 *     being saved or sent)
 * @param filterLimitBytes the node's limit for live and rebuilding filters
 * @param filterRebuilds filter rebuilds running or queued
 */
public record NodeHealth(
        String name,
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

    /** A node that did not answer, or failed the call. */
    public NodeHealth(String name, String address, int nodeIndex, String status) {
        this(name, address, nodeIndex, status, 0, 0, 0, "", 0, 0, 0);
    }

    public boolean isServing() {
        return "SERVING".equals(status);
    }
}
