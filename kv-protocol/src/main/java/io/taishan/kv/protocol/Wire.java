package io.taishan.kv.protocol;

/**
 * The transport constants both ends of a connection use, declared once: a client and a server that
 * disagreed on them would still talk, only slower.
 */
public final class Wire {
    private Wire() {}

    /**
     * The most bytes of a value or a filter one stream message carries (ReadValue, UploadValue,
     * FetchFilter): far below any gRPC message limit, few messages per value, and one chunk is all
     * a slow reader makes the sender buffer.
     */
    public static final int CHUNK_BYTES = 1 << 20;

    /**
     * The HTTP/2 receive window of every stream and connection, on both ends, fixed. gRPC's
     * default, 1 MiB with BDP auto-tuning, answers data with PING frames to measure the link, which
     * every small call then pays for; and a 1 MiB write batch does not fit the default window with
     * its framing. 4 MiB holds a full batch and the next one.
     */
    public static final int FLOW_CONTROL_WINDOW_BYTES = 4 << 20;
}
