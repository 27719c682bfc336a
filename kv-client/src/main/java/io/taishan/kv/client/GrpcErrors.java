package io.taishan.kv.client;

import io.grpc.Metadata;
import io.grpc.Status;
import io.taishan.kv.proto.ErrorCode;
import javax.annotation.Nullable;

/** Turns a failed gRPC call into the typed {@link KvException} a caller can act on. */
final class GrpcErrors {
    private GrpcErrors() {}

    /** Whether a failure may go away by itself, so that an idempotent call is worth repeating. */
    static boolean isTransient(Status.Code code) {
        return code == Status.Code.UNAVAILABLE || code == Status.Code.DEADLINE_EXCEEDED;
    }

    /**
     * {@link #isTransient} unless the server said its filter is unavailable: that lasts as long as
     * a rebuild scan, far longer than our backoff, so the caller decides when to ask again.
     */
    static boolean isRetryable(Throwable failure) {
        return isTransient(Status.fromThrowable(failure).getCode())
                && errorCodeOf(Status.trailersFromThrowable(failure))
                        != ErrorCode.FILTER_UNAVAILABLE;
    }

    static KvException toKvException(Throwable failure, String address, String what, int attempts) {
        if (failure instanceof KvException kv) {
            return kv;
        }
        Status status = Status.fromThrowable(failure);
        ErrorCode code = errorCodeOf(Status.trailersFromThrowable(failure));
        String message =
                what
                        + " failed: "
                        + status.getCode()
                        + (status.getDescription() == null ? "" : ": " + status.getDescription());
        switch (code) {
            case TABLE_NOT_FOUND:
                return new TableNotFoundException(message, address, failure);
            case TABLE_EXISTS:
                return new TableExistsException(message, address, failure);
            case FENCED:
                return new FencedException(message, address, failure);
            case SNAPSHOT_NOT_FOUND:
                return new SnapshotNotFoundException(message, address, failure);
            case SHARD_NOT_OWNED:
                return new ShardNotOwnedException(message, address, failure);
            case LIMIT_EXCEEDED:
                return new LimitExceededException(message, address, failure);
            case SHUTTING_DOWN:
                return new KvUnavailableException(message, address, attempts, failure);
            case FILTER_UNAVAILABLE:
                return new FilterUnavailableException(message, address, failure);
            case ERROR_CODE_UNSPECIFIED:
                return fromStatusOnly(status, message, address, attempts, failure);
            default:
                return new KvException(code, message, address, failure);
        }
    }

    /** Failures without our trailer: transport trouble, or limits that gRPC itself enforced. */
    private static KvException fromStatusOnly(
            Status status, String message, String address, int attempts, Throwable failure) {
        switch (status.getCode()) {
            case UNAVAILABLE:
            case DEADLINE_EXCEEDED:
                return new KvUnavailableException(message, address, attempts, failure);
            case RESOURCE_EXHAUSTED:
                return new LimitExceededException(message, address, failure);
            case INVALID_ARGUMENT:
                return new KvException(ErrorCode.INVALID_ARGUMENT, message, address, failure);
            default:
                return new KvException(ErrorCode.ERROR_CODE_UNSPECIFIED, message, address, failure);
        }
    }

    private static ErrorCode errorCodeOf(@Nullable Metadata trailers) {
        String name = trailers == null ? null : trailers.get(KvErrors.ERROR_CODE_KEY);
        if (name == null) {
            return ErrorCode.ERROR_CODE_UNSPECIFIED;
        }
        try {
            return ErrorCode.valueOf(name);
        } catch (IllegalArgumentException unknownToThisClientVersion) {
            return ErrorCode.ERROR_CODE_UNSPECIFIED;
        }
    }
}
