package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/**
 * The lease's epoch is stale: somebody opened, restored or cloned the shard since. The holder must
 * stop writing.
 */
public class FencedException extends KvException {
    private static final long serialVersionUID = 1L;

    public FencedException(String message, @Nullable String address, @Nullable Throwable cause) {
        super(ErrorCode.FENCED, message, address, cause);
    }
}
