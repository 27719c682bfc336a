package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/**
 * A failed call to the KV service. The message names what failed and, where known, the node
 * address; {@link #code()} says why in a form a caller can switch on.
 */
public class KvException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    @Nullable private final String address;

    public KvException(
            ErrorCode code, String message, @Nullable String address, @Nullable Throwable cause) {
        super(address == null ? message : message + " [kv-server " + address + "]", cause);
        this.code = code;
        this.address = address;
    }

    public ErrorCode code() {
        return code;
    }

    /** The node that answered (or failed to), or null when the failure was found client-side. */
    @Nullable
    public String address() {
        return address;
    }
}
