package io.taishan.kv.client;

/** Where a {@link KvStore} comes from. */
public final class KvStores {
    private KvStores() {}

    /**
     * Connects to a kv-server cluster over gRPC: asks the seeds (the config's addresses; one node
     * is enough), in order, for the cluster's nodes and limits, connects to every node and checks
     * that all of them answer with the same view of the cluster. Calls are routed to each shard's
     * owner under that view; when a node refuses a shard under another view, the client refreshes
     * its view. The store has every facet ({@link KvStore#filters()}, {@link KvStore#ttl()}, {@link
     * KvStore#admin()}).
     *
     * @throws KvUnavailableException naming the addresses when no seed (or some node) answers
     *     within the configured timeout and attempts
     * @throws KvException when the nodes disagree about the cluster (naming what each says), or the
     *     servers are older than named nodes
     * @throws AuthenticationException when the server does not accept the token, or the TLS
     *     handshake fails
     * @throws IllegalArgumentException naming the file when a TLS file of the config is missing,
     *     unreadable or malformed
     */
    public static KvStore connect(KvClientConfig config) {
        return GrpcKvStore.connect(config);
    }

    /**
     * What every node of the cluster says the cluster is, without connecting a store: the first
     * answering seed's view, and each of its nodes' own answer (reachable or not, the same view or
     * another). For an operator looking at a cluster that {@link #connect} refuses (a node down, a
     * change of the nodes half done).
     *
     * @throws KvUnavailableException when no seed answers
     * @throws AuthenticationException when the server does not accept the token
     */
    public static ClusterReport describeCluster(KvClientConfig config) {
        return GrpcKvStore.describeCluster(config);
    }
}
