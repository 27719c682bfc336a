package io.taishan.kv.protocol;

import io.grpc.Metadata;

/** How the server tells the client why a call failed, beside the gRPC status and message. */
public final class KvErrors {
    private KvErrors() {}

    /** Trailer holding an {@link io.taishan.kv.proto.ErrorCode} name. */
    public static final Metadata.Key<String> ERROR_CODE_KEY =
            Metadata.Key.of("taishan-error-code", Metadata.ASCII_STRING_MARSHALLER);
}
