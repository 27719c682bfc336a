package io.taishan.kv.server.rpc;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.KvErrors;
import io.taishan.kv.server.storage.KvServerException;

/** How a failure travels: a gRPC status with the message, and the error code in a trailer. */
public final class ErrorStatus {
    private ErrorStatus() {}

    public static StatusRuntimeException of(KvServerException e) {
        StatusRuntimeException status = of(e.code(), e.getMessage());
        if (e instanceof NotOwnerException notOwner) {
            status.getTrailers().put(KvErrors.CLUSTER_VIEW_KEY, notOwner.viewFingerprint());
        }
        return status;
    }

    public static StatusRuntimeException of(ErrorCode code, String message) {
        Metadata trailers = new Metadata();
        trailers.put(KvErrors.ERROR_CODE_KEY, code.name());
        return statusOf(code).withDescription(message).asRuntimeException(trailers);
    }

    static Status statusOf(ErrorCode code) {
        return switch (code) {
            case TABLE_NOT_FOUND, SNAPSHOT_NOT_FOUND -> Status.NOT_FOUND;
            case TABLE_EXISTS -> Status.ALREADY_EXISTS;
            case SHARD_OUT_OF_RANGE -> Status.OUT_OF_RANGE;
            case FENCED, SHARD_NOT_OWNED, DURABLE_DISABLED -> Status.FAILED_PRECONDITION;
            case LIMIT_EXCEEDED -> Status.RESOURCE_EXHAUSTED;
            case INVALID_ARGUMENT -> Status.INVALID_ARGUMENT;
            case SHUTTING_DOWN -> Status.UNAVAILABLE;
            case FILTER_UNAVAILABLE -> Status.UNAVAILABLE;
            case UNAUTHENTICATED -> Status.UNAUTHENTICATED;
            case PERMISSION_DENIED -> Status.PERMISSION_DENIED;
            case STORAGE_ERROR, ERROR_CODE_UNSPECIFIED, UNRECOGNIZED -> Status.INTERNAL;
        };
    }
}
