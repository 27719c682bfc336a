package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/**
 * The server knows the bearer token, but it does not cover the table named (each token is scoped to
 * table-name prefixes, see the kv-server's {@code auth.token-file}) or the call. Nothing was read
 * or changed. Never retried.
 */
public class PermissionDeniedException extends KvException {
    private static final long serialVersionUID = 1L;

    public PermissionDeniedException(
            String message, @Nullable String address, @Nullable Throwable cause) {
        super(ErrorCode.PERMISSION_DENIED, message, address, cause);
    }
}
