package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/** A key, value or request over the server's configured limits. */
public class LimitExceededException extends KvException {
    private static final long serialVersionUID = 1L;

    public LimitExceededException(
            String message, @Nullable String address, @Nullable Throwable cause) {
        super(ErrorCode.LIMIT_EXCEEDED, message, address, cause);
    }
}
