package io.taishan.kv.client;

import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/**
 * The server has no filter of the shard that it can vouch for right now: a rebuild from a key scan
 * is queued or running (after an unclean stop, or a restore of a snapshot from before filters), or
 * the node's filter memory is used up. Not retried by the client: try again later, and meanwhile
 * treat every key of the shard as possibly present.
 */
public class FilterUnavailableException extends KvException {
    private static final long serialVersionUID = 1L;

    public FilterUnavailableException(
            String message, @Nullable String address, @Nullable Throwable cause) {
        super(ErrorCode.FILTER_UNAVAILABLE, message, address, cause);
    }
}
