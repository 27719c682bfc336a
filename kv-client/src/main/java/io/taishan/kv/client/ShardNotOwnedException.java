package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/** The node asked does not own the shard: the client's shard map and the server's disagree. */
public class ShardNotOwnedException extends KvException {
    private static final long serialVersionUID = 1L;

    public ShardNotOwnedException(
            String message, @Nullable String address, @Nullable Throwable cause) {
        super(ErrorCode.SHARD_NOT_OWNED, message, address, cause);
    }
}
