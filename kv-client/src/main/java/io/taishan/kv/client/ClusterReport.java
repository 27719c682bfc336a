package io.taishan.kv.client;

import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import java.util.List;
import javax.annotation.Nullable;

/**
 * What every node of a cluster says the cluster is, as {@link KvStores#describeCluster} found it:
 * the view of the first seed that answered, and each of its nodes' own answer. Unlike {@link
 * KvStores#connect}, which refuses a cluster whose nodes disagree or do not all answer, this
 * reports them, for an operator.
 *
 * @param view the first answering seed's view
 * @param nodes one report per node of {@code view}, in its name order
 */
public record ClusterReport(ClusterView view, List<NodeReport> nodes) {

    public ClusterReport {
        nodes = List.copyOf(nodes);
    }

    /** Whether every node answered with {@link #view()}: the state a client can connect in. */
    public boolean agreed() {
        for (NodeReport node : nodes) {
            if (!node.agreesWith(view)) {
                return false;
            }
        }
        return true;
    }

    /**
     * One node's answer.
     *
     * @param node the node as the seed's view lists it
     * @param view the node's own view, or null when it did not answer
     * @param problem why it did not answer, or what is wrong with its answer; empty when nothing
     */
    public record NodeReport(ClusterNode node, @Nullable ClusterView view, String problem) {

        public boolean reachable() {
            return view != null;
        }

        /** Whether the node answered with this view, and as the node it lists at its address. */
        public boolean agreesWith(ClusterView expected) {
            return view != null && problem.isEmpty() && view.equals(expected);
        }
    }
}
