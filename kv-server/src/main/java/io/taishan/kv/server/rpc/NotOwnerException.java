package io.taishan.kv.server.rpc;

import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.server.storage.KvServerException;

/**
 * SHARD_NOT_OWNED with the refusing node's view fingerprint, which {@link ErrorStatus} sends in the
 * {@code taishan-cluster-view} trailer: a client compares it with its own view to tell a changed
 * cluster (refresh the view) from a stale shard count of its own (describe the table again).
 */
final class NotOwnerException extends KvServerException {
    private static final long serialVersionUID = 1L;

    private final String viewFingerprint;

    NotOwnerException(String message, String viewFingerprint) {
        super(ErrorCode.SHARD_NOT_OWNED, message);
        this.viewFingerprint = viewFingerprint;
    }

    String viewFingerprint() {
        return viewFingerprint;
    }
}
