package io.taishan.kv.protocol;

import io.grpc.Metadata;

/** How the server tells the client why a call failed, beside the gRPC status and message. */
public final class KvErrors {
    private KvErrors() {}

    /** Trailer holding an {@link io.taishan.kv.proto.ErrorCode} name. */
    public static final Metadata.Key<String> ERROR_CODE_KEY =
            Metadata.Key.of("taishan-error-code", Metadata.ASCII_STRING_MARSHALLER);

    /**
     * Trailer of a {@code SHARD_NOT_OWNED} refusal: the refusing node's view fingerprint ({@link
     * ClusterView#fingerprintHex()}), so that a client can tell a changed cluster from a stale
     * shard count of its own.
     */
    public static final Metadata.Key<String> CLUSTER_VIEW_KEY =
            Metadata.Key.of("taishan-cluster-view", Metadata.ASCII_STRING_MARSHALLER);
}
