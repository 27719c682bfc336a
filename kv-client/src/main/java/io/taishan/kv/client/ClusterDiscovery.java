package io.taishan.kv.client;

import io.taishan.kv.proto.ClusterInfoRequest;
import io.taishan.kv.proto.ClusterInfoResponse;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.KvLimits;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Learns the cluster from its seeds: the first seed that answers gives the ordered node list and
 * the limits; then every node must report the same list with itself at its own place, because a
 * client and a server that disagree on the shard map would send shards to the wrong node.
 */
final class ClusterDiscovery {
    private static final ClusterInfoRequest CLUSTER_INFO = ClusterInfoRequest.getDefaultInstance();

    /** The nodes in shard-map order and the limits they enforce. */
    record Cluster(List<KvNode> nodes, KvLimits limits) {}

    private ClusterDiscovery() {}

    /**
     * @param connections every node's connections opened, by address, so that the caller can close
     *     them
     */
    static Cluster discover(
            KvClientConfig config,
            ChannelSecurity security,
            RetryingCaller caller,
            Map<String, KvNode.Connections> connections) {
        KvNode seed = null;
        ClusterInfoResponse info = null;
        List<KvException> failures = new ArrayList<>();
        for (String address : config.addresses()) {
            KvNode candidate =
                    KvNode.of(-1, address, connect(connections, address, config, security));
            try {
                info =
                        caller.call(
                                candidate,
                                () -> "ClusterInfo",
                                true,
                                s -> s.clusterInfo(CLUSTER_INFO));
                seed = candidate;
                break;
            } catch (KvException e) {
                failures.add(e);
            }
        }
        if (info == null) {
            throw noSeedAnswered(config, security, failures);
        }
        List<String> addresses =
                info.getNodesCount() == 0 ? List.of(seed.address()) : info.getNodesList();
        int seedIndex = info.getNodesCount() == 0 ? 0 : info.getSelfIndex();
        if (seedIndex < 0 || seedIndex >= addresses.size()) {
            throw new KvException(
                    ErrorCode.INVALID_ARGUMENT,
                    "kv-server reports self index " + seedIndex + " in node list " + addresses,
                    seed.address(),
                    null);
        }
        List<KvNode> nodes = new ArrayList<>(addresses.size());
        for (int i = 0; i < addresses.size(); i++) {
            if (i == seedIndex) {
                // The seed is reached by the address it was given, which may differ in spelling.
                nodes.add(seed.withIndex(i));
            } else {
                String address = addresses.get(i);
                nodes.add(KvNode.of(i, address, connect(connections, address, config, security)));
            }
        }
        for (KvNode node : nodes) {
            if (node.index() != seedIndex) {
                checkAgrees(
                        node,
                        caller.call(
                                node, () -> "ClusterInfo", true, s -> s.clusterInfo(CLUSTER_INFO)),
                        addresses,
                        seed);
            }
        }
        return new Cluster(nodes, ProtoConversions.limits(info.getLimits()));
    }

    private static KvNode.Connections connect(
            Map<String, KvNode.Connections> connections,
            String address,
            KvClientConfig config,
            ChannelSecurity security) {
        return connections.computeIfAbsent(
                address, a -> KvNode.Connections.open(a, config.readChannels(), security));
    }

    private static void checkAgrees(
            KvNode node, ClusterInfoResponse info, List<String> expected, KvNode seed) {
        if (!info.getNodesList().equals(expected) || info.getSelfIndex() != node.index()) {
            throw new KvException(
                    ErrorCode.INVALID_ARGUMENT,
                    "kv-server cluster misconfigured: node "
                            + node.index()
                            + " reports node list "
                            + info.getNodesList()
                            + " with itself at index "
                            + info.getSelfIndex()
                            + ", but "
                            + seed.address()
                            + " reports "
                            + expected
                            + " with it at index "
                            + node.index(),
                    node.address(),
                    null);
        }
    }

    /**
     * A TLS server closes a plaintext client's connection without a word, which the client sees as
     * "Network closed for unknown reason", as from a server that went away mid-call: say what is
     * the likelier cause when every seed did that to a plaintext client.
     */
    private static String plaintextHint(ChannelSecurity security, List<KvException> failures) {
        if (security.usesTls() || failures.isEmpty()) {
            return "";
        }
        for (KvException failure : failures) {
            io.grpc.Status status = io.grpc.Status.fromThrowable(failure);
            if (status.getDescription() == null
                    || !status.getDescription().contains("Network closed for unknown reason")) {
                return "";
            }
        }
        return ": every connection was closed before an answer, as a TLS server closes a"
                + " plaintext client's; if the server requires TLS, configure the client's TLS too";
    }

    private static KvException noSeedAnswered(
            KvClientConfig config, ChannelSecurity security, List<KvException> failures) {
        KvException result = null;
        for (KvException failure : failures) {
            if (!(failure instanceof KvUnavailableException)) {
                // Something answered, but not as a Taishan kv-server would: that says more.
                result = failure;
                break;
            }
        }
        if (result == null) {
            result =
                    new KvUnavailableException(
                            "no kv-server answered at "
                                    + String.join(", ", config.addresses())
                                    + plaintextHint(security, failures),
                            String.join(",", config.addresses()),
                            config.maxAttempts(),
                            failures.get(0));
        }
        for (KvException failure : failures) {
            if (failure != result && failure != result.getCause()) {
                result.addSuppressed(failure);
            }
        }
        return result;
    }
}
