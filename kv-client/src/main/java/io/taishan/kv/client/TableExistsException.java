package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/** A table of that name exists already (with another shard count, for createTableIfAbsent). */
public class TableExistsException extends KvException {
    private static final long serialVersionUID = 1L;

    public TableExistsException(
            String message, @Nullable String address, @Nullable Throwable cause) {
        super(ErrorCode.TABLE_EXISTS, message, address, cause);
    }
}
