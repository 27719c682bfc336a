package io.taishan.kv.client;

import io.taishan.kv.proto.ClusterInfoRequest;
import io.taishan.kv.proto.ClusterInfoResponse;
import io.taishan.kv.proto.ClusterMember;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.protocol.ShardPlacement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import javax.annotation.Nullable;

/**
 * Learns the cluster from seeds: the first seed that answers {@code ClusterInfo} gives the view
 * (every node by name and address, and the view's fingerprint) and the limits; then every node of
 * the view must answer with the same fingerprint and as the node the view lists at its address.
 * Safety does not rest on this check (each node refuses the shards it does not own under its own
 * view); it turns a disagreement into one clear error instead of a stream of refusals.
 */
final class ClusterDiscovery {
    private static final ClusterInfoRequest CLUSTER_INFO = ClusterInfoRequest.getDefaultInstance();

    /** The name a server from before named nodes gets, when it is a single node. */
    static final String UNNAMED_SINGLE_NODE = "kv1";

    /** The view, its nodes in name order, and the limits they enforce. */
    record Cluster(ClusterView view, List<KvNode> nodes, KvLimits limits) {}

    private ClusterDiscovery() {}

    /**
     * @param seeds the addresses to ask, in order
     * @param connections the connections opened, by address, which the caller closes when it does
     *     not keep them; it may hold connections already, which are reused
     * @throws KvUnavailableException when no seed, or some node, does not answer
     * @throws KvException when the nodes disagree on the cluster or a node answers as no kv-server
     *     of this version would
     */
    static Cluster discover(
            List<String> seeds,
            KvClientConfig config,
            ChannelSecurity security,
            RetryingCaller caller,
            Map<String, KvNode.Connections> connections) {
        Answer seed = firstAnswer(seeds, config, security, caller, connections);
        ClusterView view = viewOf(seed.info(), seed.node().address());
        List<KvNode> nodes = nodesOf(view, seed, config, security, connections);
        List<CompletableFuture<ClusterInfoResponse>> answers = new ArrayList<>();
        for (KvNode node : nodes) {
            answers.add(
                    node.index() == seed.info().getSelfIndex()
                            ? CompletableFuture.completedFuture(seed.info())
                            : caller.callAsync(
                                    node,
                                    () -> "ClusterInfo",
                                    true,
                                    s -> s.clusterInfo(CLUSTER_INFO)));
        }
        Map<String, String> disagreements = new LinkedHashMap<>();
        for (int i = 0; i < nodes.size(); i++) {
            KvNode node = nodes.get(i);
            ClusterInfoResponse info;
            try {
                info = answers.get(i).join();
            } catch (CompletionException e) {
                throw e.getCause() instanceof KvException kv ? kv : e;
            }
            String problem = problemWith(info, node, view);
            if (!problem.isEmpty()) {
                disagreements.put(node.name() + " at " + node.address(), problem);
            }
        }
        if (!disagreements.isEmpty()) {
            throw disagreement(view, seed.node(), disagreements);
        }
        return new Cluster(view, nodes, ProtoConversions.limits(seed.info().getLimits()));
    }

    /**
     * Every node's own answer, never failing for one node: for an operator's look at a cluster that
     * may be half-way through a change.
     *
     * @throws KvUnavailableException when no seed answers
     */
    static ClusterReport describe(
            KvClientConfig config,
            ChannelSecurity security,
            RetryingCaller caller,
            Map<String, KvNode.Connections> connections) {
        Answer seed = firstAnswer(config.addresses(), config, security, caller, connections);
        ClusterView view = viewOf(seed.info(), seed.node().address());
        List<KvNode> nodes = nodesOf(view, seed, config, security, connections);
        List<CompletableFuture<ClusterReport.NodeReport>> reports = new ArrayList<>();
        for (KvNode node : nodes) {
            CompletableFuture<ClusterInfoResponse> answer =
                    node.index() == seed.info().getSelfIndex()
                            ? CompletableFuture.completedFuture(seed.info())
                            : caller.callAsync(
                                    node,
                                    () -> "ClusterInfo",
                                    true,
                                    s -> s.clusterInfo(CLUSTER_INFO));
            reports.add(answer.handle((info, failure) -> report(node, view, info, failure)));
        }
        List<ClusterReport.NodeReport> result = new ArrayList<>();
        for (CompletableFuture<ClusterReport.NodeReport> report : reports) {
            result.add(report.join());
        }
        return new ClusterReport(view, result);
    }

    private static ClusterReport.NodeReport report(
            KvNode node,
            ClusterView expected,
            @Nullable ClusterInfoResponse info,
            @Nullable Throwable failure) {
        ClusterNode listed = expected.node(node.index());
        if (failure != null) {
            Throwable cause = failure instanceof CompletionException ? failure.getCause() : failure;
            return new ClusterReport.NodeReport(listed, null, String.valueOf(cause.getMessage()));
        }
        ClusterView own;
        try {
            own = viewOf(info, node.address());
        } catch (KvException e) {
            return new ClusterReport.NodeReport(listed, null, e.getMessage());
        }
        ClusterNode self = own.node(info.getSelfIndex());
        String problem =
                self.name().equals(listed.name())
                        ? ""
                        : "listed as " + listed.name() + " but says it is " + self.name();
        return new ClusterReport.NodeReport(listed, own, problem);
    }

    /** A seed and what it answered. */
    private record Answer(KvNode node, ClusterInfoResponse info) {}

    private static Answer firstAnswer(
            List<String> seeds,
            KvClientConfig config,
            ChannelSecurity security,
            RetryingCaller caller,
            Map<String, KvNode.Connections> connections) {
        List<KvException> failures = new ArrayList<>();
        for (String address : seeds) {
            KvNode candidate =
                    KvNode.seed(address, connect(connections, address, config, security));
            try {
                return new Answer(
                        candidate,
                        caller.call(
                                candidate,
                                () -> "ClusterInfo",
                                true,
                                s -> s.clusterInfo(CLUSTER_INFO)));
            } catch (KvException e) {
                failures.add(e);
            }
        }
        throw noSeedAnswered(seeds, config, security, failures);
    }

    /**
     * The view a node answered with, checked: names and addresses well formed, a placement this
     * client knows, the fingerprint it computes itself.
     */
    static ClusterView viewOf(ClusterInfoResponse info, String address) {
        if (info.getMembersCount() == 0) {
            if (info.getNodesCount() <= 1) {
                // A single server from before named nodes: it owns every shard, whatever its name.
                return ClusterView.single(UNNAMED_SINGLE_NODE, address);
            }
            throw new KvException(
                    ErrorCode.INVALID_ARGUMENT,
                    "kv-server "
                            + address
                            + " lists "
                            + info.getNodesCount()
                            + " nodes without names: it is older than this client, which places"
                            + " shards by node name; upgrade every kv-server first"
                            + " (docs/operations.md, Upgrades)",
                    address,
                    null);
        }
        if (info.getPlacement() != ShardPlacement.VERSION) {
            throw new KvException(
                    ErrorCode.INVALID_ARGUMENT,
                    "kv-server "
                            + address
                            + " places shards by placement "
                            + info.getPlacement()
                            + ", which this client does not know (it knows "
                            + ShardPlacement.VERSION
                            + "): upgrade the client",
                    address,
                    null);
        }
        ClusterView view;
        try {
            List<ClusterNode> members = new ArrayList<>(info.getMembersCount());
            for (ClusterMember m : info.getMembersList()) {
                members.add(new ClusterNode(m.getName(), m.getAddress()));
            }
            view = ClusterView.of(members);
        } catch (IllegalArgumentException e) {
            throw new KvException(
                    ErrorCode.INVALID_ARGUMENT,
                    "kv-server " + address + " answers with a bad node list: " + e.getMessage(),
                    address,
                    null);
        }
        if (view.fingerprint() != info.getViewFingerprint()
                || info.getSelfIndex() < 0
                || info.getSelfIndex() >= view.size()) {
            throw new KvException(
                    ErrorCode.INVALID_ARGUMENT,
                    "kv-server "
                            + address
                            + " answers with view "
                            + ClusterView.hex(info.getViewFingerprint())
                            + " and itself at "
                            + info.getSelfIndex()
                            + ", but its node list ("
                            + view
                            + ") is view "
                            + view.fingerprintHex()
                            + " to this client",
                    address,
                    null);
        }
        return view;
    }

    /** The view's nodes, the seed among them at its place and reached as it was given. */
    private static List<KvNode> nodesOf(
            ClusterView view,
            Answer seed,
            KvClientConfig config,
            ChannelSecurity security,
            Map<String, KvNode.Connections> connections) {
        int seedIndex = seed.info().getSelfIndex();
        List<KvNode> nodes = new ArrayList<>(view.size());
        for (int i = 0; i < view.size(); i++) {
            ClusterNode node = view.node(i);
            if (i == seedIndex) {
                // The seed is reached by the address it was given, which may differ in spelling.
                nodes.add(seed.node().placed(i, node.name()));
            } else {
                nodes.add(
                        KvNode.of(
                                i,
                                node.name(),
                                node.address(),
                                connect(connections, node.address(), config, security)));
            }
        }
        return nodes;
    }

    /** What is wrong with a node's answer, or empty. */
    private static String problemWith(ClusterInfoResponse info, KvNode node, ClusterView expected) {
        ClusterView own;
        try {
            own = viewOf(info, node.address());
        } catch (KvException e) {
            return e.getMessage();
        }
        if (!own.equals(expected)) {
            return "reports view " + own.fingerprintHex() + " (" + own + ")";
        }
        String self = own.node(info.getSelfIndex()).name();
        if (!self.equals(node.name())) {
            return "says it is " + self;
        }
        return "";
    }

    private static KvException disagreement(
            ClusterView view, KvNode seed, Map<String, String> disagreements) {
        StringBuilder message =
                new StringBuilder(
                                "kv-server cluster misconfigured, or a change of cluster.nodes under way:"
                                        + " seed ")
                        .append(seed.address())
                        .append(" reports view ")
                        .append(view.fingerprintHex())
                        .append(" (")
                        .append(view)
                        .append("), but");
        String sep = " ";
        for (Map.Entry<String, String> d : disagreements.entrySet()) {
            message.append(sep).append(d.getKey()).append(' ').append(d.getValue());
            sep = "; ";
        }
        message.append(": every node must list the same nodes (cluster.nodes), each under its own")
                .append(" name (cluster.node-name)");
        String first = disagreements.keySet().iterator().next();
        return new KvException(
                ErrorCode.INVALID_ARGUMENT,
                message.toString(),
                first.substring(first.indexOf(" at ") + 4),
                null);
    }

    static KvNode.Connections connect(
            Map<String, KvNode.Connections> connections,
            String address,
            KvClientConfig config,
            ChannelSecurity security) {
        return connections.computeIfAbsent(
                address, a -> KvNode.Connections.open(a, config.readChannels(), security));
    }

    /**
     * A TLS server closes a plaintext client's connection without a word, which the client sees as
     * "Network closed for unknown reason", as from a server that went away mid-call: say what is
     * the likelier cause when a seed did that to a plaintext client and every other attempt failed
     * to connect or ran out of time (a loaded machine turns some of the closes into timeouts).
     */
    private static String plaintextHint(ChannelSecurity security, List<KvException> failures) {
        if (security.usesTls() || failures.isEmpty()) {
            return "";
        }
        boolean closedUnanswered = false;
        for (KvException failure : failures) {
            io.grpc.Status status = io.grpc.Status.fromThrowable(failure);
            if (status.getCode() != io.grpc.Status.Code.UNAVAILABLE
                    && status.getCode() != io.grpc.Status.Code.DEADLINE_EXCEEDED) {
                return "";
            }
            closedUnanswered |=
                    status.getDescription() != null
                            && status.getDescription()
                                    .contains("Network closed for unknown reason");
        }
        if (!closedUnanswered) {
            return "";
        }
        return ": connections were closed before an answer, as a TLS server closes a"
                + " plaintext client's; if the server requires TLS, configure the client's TLS too";
    }

    private static KvException noSeedAnswered(
            List<String> seeds,
            KvClientConfig config,
            ChannelSecurity security,
            List<KvException> failures) {
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
                                    + String.join(", ", seeds)
                                    + plaintextHint(security, failures),
                            String.join(",", seeds),
                            config.maxAttempts(),
                            failures.isEmpty() ? null : failures.get(0));
        }
        for (KvException failure : failures) {
            if (failure != result && failure != result.getCause()) {
                result.addSuppressed(failure);
            }
        }
        return result;
    }
}
