package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/** The named table does not exist. */
public class TableNotFoundException extends KvException {
    private static final long serialVersionUID = 1L;

    public TableNotFoundException(
            String message, @Nullable String address, @Nullable Throwable cause) {
        super(ErrorCode.TABLE_NOT_FOUND, message, address, cause);
    }
}
