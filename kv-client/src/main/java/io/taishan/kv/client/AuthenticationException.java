package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/**
 * The two ends did not accept each other: the server wants a bearer token and got none, or one it
 * does not know; or the TLS handshake failed (the client does not trust the server's certificate,
 * the server wants a client certificate it trusts, or one end speaks TLS and the other does not).
 * Never retried: the same credentials would fail again. The message says which, never the token.
 */
public class AuthenticationException extends KvException {
    private static final long serialVersionUID = 1L;

    public AuthenticationException(
            String message, @Nullable String address, @Nullable Throwable cause) {
        super(ErrorCode.UNAUTHENTICATED, message, address, cause);
    }
}
