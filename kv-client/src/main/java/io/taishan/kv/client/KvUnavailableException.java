package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/**
 * A node did not answer within the deadline, or could not be reached, after every attempt the
 * client was allowed.
 */
public class KvUnavailableException extends KvException {
    private static final long serialVersionUID = 1L;

    private final int attempts;

    public KvUnavailableException(
            String message, String address, int attempts, @Nullable Throwable cause) {
        super(
                ErrorCode.ERROR_CODE_UNSPECIFIED,
                message + " (unavailable after " + attempts + " attempt(s))",
                address,
                cause);
        this.attempts = attempts;
    }

    public int attempts() {
        return attempts;
    }
}
