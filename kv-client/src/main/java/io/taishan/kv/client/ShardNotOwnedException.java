package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/**
 * The node asked does not own the shard: the client's view of the cluster and the node's differ
 * (the cluster changed: the client refreshes its view, and a lease taken before is void where the
 * shard moved), or the client's shard count of the table is stale.
 */
public class ShardNotOwnedException extends KvException {
    private static final long serialVersionUID = 1L;

    @Nullable private final String nodeView;

    public ShardNotOwnedException(
            String message, @Nullable String address, @Nullable Throwable cause) {
        this(message, address, cause, null);
    }

    /**
     * @param nodeView the refusing node's view fingerprint (16 hex digits), if it said
     */
    public ShardNotOwnedException(
            String message,
            @Nullable String address,
            @Nullable Throwable cause,
            @Nullable String nodeView) {
        super(ErrorCode.SHARD_NOT_OWNED, message, address, cause);
        this.nodeView = nodeView;
    }

    /**
     * The fingerprint of the refusing node's view of the cluster, as 16 hex digits; null when the
     * client refused the call itself, or the node did not say (a server before named nodes).
     */
    @Nullable
    public String nodeView() {
        return nodeView;
    }
}
