package io.taishan.kv.protocol;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The nodes of a kv-server cluster as one node or client sees them: named nodes in name order, the
 * {@link ShardPlacement} over their names, and a fingerprint that two views share exactly when they
 * list the same names at the same addresses under the same placement.
 *
 * <p>Why a fingerprint and no version number: views are written by hand, one config file per node,
 * so nothing would keep a counter in step with the content; two lists that differ would carry the
 * same number and two equal ones different numbers. A hash of the content tells equal views from
 * different ones with nothing to maintain (SHA-256 of the canonical list, first 8 bytes: a chance
 * collision is about 2^-64).
 *
 * <p>The address is part of the fingerprint although the placement uses only names, so that a node
 * replaced on another machine under its name is a change a client notices, and reconnects for.
 */
public final class ClusterView {
    private final List<ClusterNode> nodes;
    private final long fingerprint;
    private final ShardPlacement placement;

    private ClusterView(List<ClusterNode> sortedNodes) {
        this.nodes = List.copyOf(sortedNodes);
        List<String> names = new ArrayList<>(nodes.size());
        for (ClusterNode node : nodes) {
            names.add(node.name());
        }
        this.placement = ShardPlacement.of(names);
        this.fingerprint = fingerprintOf(nodes);
    }

    /**
     * The view of these nodes, in any order.
     *
     * @throws IllegalArgumentException when there is none, or a name or an address is given twice
     */
    public static ClusterView of(Collection<ClusterNode> nodes) {
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("a cluster has at least one node");
        }
        List<ClusterNode> sorted = new ArrayList<>(nodes);
        sorted.sort(Comparator.comparing(ClusterNode::name));
        Map<String, String> byAddress = new HashMap<>();
        for (int i = 0; i < sorted.size(); i++) {
            ClusterNode node = sorted.get(i);
            if (i > 0 && sorted.get(i - 1).name().equals(node.name())) {
                throw new IllegalArgumentException("node name '" + node.name() + "' given twice");
            }
            String other = byAddress.putIfAbsent(node.address(), node.name());
            if (other != null) {
                throw new IllegalArgumentException(
                        "address "
                                + node.address()
                                + " given to both "
                                + other
                                + " and "
                                + node.name());
            }
        }
        return new ClusterView(sorted);
    }

    /** A cluster of one node. */
    public static ClusterView single(String name, String address) {
        return of(List.of(new ClusterNode(name, address)));
    }

    /**
     * Reads a node list, {@code name=host:port[,name=host:port...]} (blanks around entries
     * ignored).
     *
     * @throws IllegalArgumentException naming the first bad entry; an entry without a name (the
     *     list of positions this replaced) is told what to write instead
     */
    public static ClusterView parse(String list) {
        List<ClusterNode> nodes = new ArrayList<>();
        for (String entry : list.split(",")) {
            String e = entry.strip();
            if (e.isEmpty()) {
                continue;
            }
            int eq = e.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException(
                        "node '"
                                + e
                                + "' has no name: write name=host:port, e.g. kv"
                                + (nodes.size() + 1)
                                + "="
                                + e
                                + " (shards are placed by node name, not by position in the"
                                + " list)");
            }
            nodes.add(new ClusterNode(e.substring(0, eq).strip(), e.substring(eq + 1).strip()));
        }
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException("no node in '" + list + "'");
        }
        return of(nodes);
    }

    /** The nodes in name order: positions in this list are what {@link #ownerOf} answers. */
    public List<ClusterNode> nodes() {
        return nodes;
    }

    public int size() {
        return nodes.size();
    }

    public ClusterNode node(int index) {
        return nodes.get(index);
    }

    /** The node's position in {@link #nodes()}, or -1. */
    public int indexOf(String name) {
        for (int i = 0; i < nodes.size(); i++) {
            if (nodes.get(i).name().equals(name)) {
                return i;
            }
        }
        return -1;
    }

    /** The position in {@link #nodes()} of the shard's owner. */
    public int ownerOf(int shard, int shardCount) {
        return placement.ownerOf(shard, shardCount);
    }

    /** The shard's owner. */
    public ClusterNode owner(int shard, int shardCount) {
        return nodes.get(placement.ownerOf(shard, shardCount));
    }

    public ShardPlacement placement() {
        return placement;
    }

    /** Equal for equal views, different (but for a 2^-64 chance) otherwise. */
    public long fingerprint() {
        return fingerprint;
    }

    /** The fingerprint as 16 hex digits, as logs, errors and the admin show it. */
    public String fingerprintHex() {
        return hex(fingerprint);
    }

    /** A fingerprint as 16 hex digits. */
    public static String hex(long fingerprint) {
        return String.format("%016x", fingerprint);
    }

    /** The names, comma-separated: for messages. */
    public String nameList() {
        StringBuilder text = new StringBuilder();
        for (ClusterNode node : nodes) {
            text.append(text.length() == 0 ? "" : ", ").append(node.name());
        }
        return text.toString();
    }

    private static long fingerprintOf(List<ClusterNode> sorted) {
        StringBuilder canonical =
                new StringBuilder("placement=").append(ShardPlacement.VERSION).append('\n');
        for (ClusterNode node : sorted) {
            canonical.append(node.name()).append('=').append(node.address()).append('\n');
        }
        try {
            byte[] digest =
                    MessageDigest.getInstance("SHA-256")
                            .digest(canonical.toString().getBytes(StandardCharsets.UTF_8));
            long f = 0;
            for (int i = 0; i < 8; i++) {
                f = (f << 8) | (digest[i] & 0xff);
            }
            return f;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ClusterView other && nodes.equals(other.nodes);
    }

    @Override
    public int hashCode() {
        return nodes.hashCode();
    }

    /** The node list as a config file writes it. */
    @Override
    public String toString() {
        StringBuilder text = new StringBuilder();
        for (ClusterNode node : nodes) {
            text.append(text.length() == 0 ? "" : ",").append(node);
        }
        return text.toString();
    }
}
