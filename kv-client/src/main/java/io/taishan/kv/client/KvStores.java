package io.taishan.kv.client;

/** Where a {@link KvStore} comes from. */
public final class KvStores {
    private KvStores() {}

    /**
     * Connects to a kv-server cluster over gRPC: asks the seeds, in order, for the cluster's node
     * list and limits, connects to every node and checks that all of them agree on the node list.
     * The store has every facet ({@link KvStore#filters()}, {@link KvStore#ttl()}, {@link
     * KvStore#admin()}).
     *
     * @throws KvUnavailableException naming the addresses when no seed (or some node) answers
     *     within the configured timeout and attempts
     * @throws KvException when the nodes disagree about the cluster
     * @throws AuthenticationException when the server does not accept the token, or the TLS
     *     handshake fails
     * @throws IllegalArgumentException naming the file when a TLS file of the config is missing,
     *     unreadable or malformed
     */
    public static KvStore connect(KvClientConfig config) {
        return GrpcKvStore.connect(config);
    }
}
