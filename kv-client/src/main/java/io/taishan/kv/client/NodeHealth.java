package io.taishan.kv.client;

/** What one node reported on its health RPC. */
public record NodeHealth(
        String address,
        int nodeIndex,
        String status,
        int openShards,
        int tables,
        long uptimeMillis,
        String version) {

    public boolean isServing() {
        return "SERVING".equals(status);
    }
}
