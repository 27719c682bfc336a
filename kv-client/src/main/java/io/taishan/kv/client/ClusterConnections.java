package io.taishan.kv.client;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;

/**
 * The connections of a client to the nodes of its view, and the discovery that makes and remakes
 * that view ({@link ClusterDiscovery}). A refresh asks a given node first (the one that refused a
 * shard: it has the view that contradicted the client's), then the seeds and the nodes of the
 * current view; it reuses the connections to nodes that stay and closes, gracefully, those to nodes
 * that left. One refresh at a time. Thread-safe.
 */
final class ClusterConnections {
    private final KvClientConfig config;
    private final ChannelSecurity security;
    private final RetryingCaller caller;

    @GuardedBy("this")
    private final Map<String, KvNode.Connections> open = new LinkedHashMap<>();

    ClusterConnections(KvClientConfig config, ChannelSecurity security, RetryingCaller caller) {
        this.config = config;
        this.security = security;
        this.caller = caller;
    }

    /** The first discovery, from the configured seeds; closes what it opened if it fails. */
    synchronized ClusterDiscovery.Cluster connect() {
        try {
            ClusterDiscovery.Cluster cluster =
                    ClusterDiscovery.discover(config.addresses(), config, security, caller, open);
            retainOnly(cluster.nodes());
            for (KvNode node : cluster.nodes()) {
                node.connections().connectReads();
            }
            return cluster;
        } catch (RuntimeException e) {
            shutdownNow();
            throw e;
        }
    }

    /**
     * Discovers the cluster again.
     *
     * @param askFirst the address to ask before the seeds and the current nodes, or null
     * @return the new cluster, or null when its view is {@code current}
     * @throws KvException as {@link ClusterDiscovery#discover}: nodes that disagree (a change under
     *     way), a node that does not answer
     */
    @Nullable
    synchronized ClusterDiscovery.Cluster rediscover(
            @Nullable String askFirst, ShardRouter.Routing current) {
        Set<String> seeds = new LinkedHashSet<>();
        if (askFirst != null) {
            seeds.add(askFirst);
        }
        seeds.addAll(config.addresses());
        for (KvNode node : current.nodes()) {
            seeds.add(node.address());
        }
        ClusterDiscovery.Cluster cluster;
        try {
            cluster =
                    ClusterDiscovery.discover(
                            new ArrayList<>(seeds), config, security, caller, open);
        } catch (RuntimeException e) {
            // Connections opened for nodes of a view not taken.
            retainOnly(current.nodes());
            throw e;
        }
        if (cluster.view().equals(current.view())) {
            retainOnly(current.nodes());
            return null;
        }
        List<KvNode> both = new ArrayList<>(current.nodes());
        both.addAll(cluster.nodes());
        retainOnly(both);
        for (KvNode node : cluster.nodes()) {
            node.connections().connectReads();
        }
        return cluster;
    }

    /**
     * Closes every connection that none of the given nodes uses, letting calls on it finish: after
     * a new view was installed, those to the nodes that left it.
     */
    synchronized void retainOnly(List<KvNode> kept) {
        Set<KvNode.Connections> used = new HashSet<>();
        for (KvNode node : kept) {
            used.add(node.connections());
        }
        open.values()
                .removeIf(
                        c -> {
                            if (used.contains(c)) {
                                return false;
                            }
                            c.shutdown();
                            return true;
                        });
    }

    /** Every connection open now. */
    synchronized List<KvNode.Connections> all() {
        return new ArrayList<>(open.values());
    }

    synchronized void shutdownNow() {
        open.values().forEach(KvNode.Connections::shutdownNow);
        open.clear();
    }
}
