package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/** The named shard snapshot does not exist (never taken, or dropped). */
public class SnapshotNotFoundException extends KvException {
    private static final long serialVersionUID = 1L;

    public SnapshotNotFoundException(
            String message, @Nullable String address, @Nullable Throwable cause) {
        super(ErrorCode.SNAPSHOT_NOT_FOUND, message, address, cause);
    }
}
