package io.taishan.kv.protocol;

import java.util.Objects;

/**
 * A node of a kv-server cluster: its name, which {@link ShardPlacement} places shards by and which
 * stays when the node moves to another machine, and the {@code host:port} it is reached at.
 *
 * @param name {@code [A-Za-z0-9_.-]{1,64}}
 * @param address {@code host:port}, port 1..65535
 */
public record ClusterNode(String name, String address) {
    /** The longest node name. */
    public static final int MAX_NAME_LENGTH = 64;

    /**
     * @throws IllegalArgumentException for a bad name or address, naming it
     */
    public ClusterNode {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(address, "address");
        checkName(name);
        checkAddress(address);
    }

    /** Fails unless the name is 1 to 64 of {@code A-Z a-z 0-9 _ . -}. */
    public static void checkName(String name) {
        boolean ok = !name.isEmpty() && name.length() <= MAX_NAME_LENGTH;
        for (int i = 0; ok && i < name.length(); i++) {
            char c = name.charAt(i);
            ok =
                    (c >= 'a' && c <= 'z')
                            || (c >= 'A' && c <= 'Z')
                            || (c >= '0' && c <= '9')
                            || c == '_'
                            || c == '.'
                            || c == '-';
        }
        if (!ok) {
            throw new IllegalArgumentException(
                    "bad node name '"
                            + name
                            + "': expected 1 to "
                            + MAX_NAME_LENGTH
                            + " of A-Z a-z 0-9 _ . -");
        }
    }

    /** Fails unless the address is {@code host:port} with a port in 1..65535. */
    public static void checkAddress(String address) {
        int colon = address.lastIndexOf(':');
        boolean ok = colon > 0 && colon < address.length() - 1;
        if (ok) {
            try {
                int port = Integer.parseInt(address.substring(colon + 1));
                ok = port > 0 && port <= 65535;
            } catch (NumberFormatException e) {
                ok = false;
            }
        }
        if (!ok) {
            throw new IllegalArgumentException(
                    "bad node address '" + address + "': expected host:port");
        }
    }

    /** As in a node list: {@code name=host:port}. */
    @Override
    public String toString() {
        return name + "=" + address;
    }
}
