package io.taishan.kv.client;

import io.grpc.Metadata;
import io.grpc.Status;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.KvErrors;
import java.nio.channels.ClosedChannelException;
import javax.annotation.Nullable;
import javax.net.ssl.SSLException;

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
        return (isTransient(Status.fromThrowable(failure).getCode()) || lostConnection(failure))
                && errorCodeOf(Status.trailersFromThrowable(failure))
                        != ErrorCode.FILTER_UNAVAILABLE
                && tlsFailure(failure) == null;
    }

    /**
     * Whether the call failed because its connection closed under it (the server was killed or
     * restarted while the call was in flight): gRPC's Netty transport reports some of those as
     * {@code UNKNOWN: channel closed} (a {@link ClosedChannelException} as cause) instead of
     * UNAVAILABLE. They are the same server-gone failure and are treated as such.
     */
    static boolean lostConnection(Throwable failure) {
        if (Status.fromThrowable(failure).getCode() != Status.Code.UNKNOWN) {
            return false;
        }
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ClosedChannelException) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return "channel closed".equals(Status.fromThrowable(failure).getDescription());
    }

    /**
     * The TLS failure under a failed call, if any. gRPC reports a failed handshake as UNAVAILABLE,
     * like a server that is down; but an untrusted certificate or a missing client certificate is
     * not transient, and retrying it only hides the reason behind "unavailable".
     */
    @Nullable
    static SSLException tlsFailure(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof SSLException ssl) {
                return ssl;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    /** The handshake failure in words, with its likeliest reason. */
    private static String describe(SSLException tls) {
        Throwable root = tls;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = tls.getMessage() + (root == tls ? "" : ": " + root.getMessage());
        String hint;
        if (root instanceof java.security.cert.CertPathBuilderException
                || root instanceof java.security.cert.CertPathValidatorException
                || text.contains("PKIX")) {
            hint = "the server's certificate does not chain to a CA this client trusts";
        } else if (text.contains("subject alternative") || text.contains("No name matching")) {
            hint = "the server's certificate does not name the host this client dialled";
        } else if (text.contains("CERTIFICATE_REQUIRED")
                || text.contains("BAD_CERTIFICATE")
                || text.contains("UNKNOWN_CA")) {
            hint = "the server wants a client certificate signed by a CA it trusts: mutual TLS";
        } else if (text.contains("not an SSL/TLS record")) {
            hint = "the server does not speak TLS";
        } else {
            hint =
                    "check the CA this client trusts, the server's certificate, and whether the"
                            + " server wants a client certificate";
        }
        // "not an SSL/TLS record" comes with a hex dump of everything received.
        if (text.length() > 160) {
            text = text.substring(0, 160) + "...";
        }
        return text + " (" + hint + ")";
    }

    static KvException toKvException(Throwable failure, String address, String what, int attempts) {
        if (failure instanceof KvException kv) {
            return kv;
        }
        Status status = Status.fromThrowable(failure);
        ErrorCode code = errorCodeOf(Status.trailersFromThrowable(failure));
        SSLException tls = tlsFailure(failure);
        if (tls != null && code == ErrorCode.ERROR_CODE_UNSPECIFIED) {
            return new AuthenticationException(
                    what + " failed: TLS handshake failed: " + describe(tls), address, failure);
        }
        String message =
                what
                        + " failed: "
                        + status.getCode()
                        + (status.getDescription() == null ? "" : ": " + status.getDescription());
        if (code == ErrorCode.ERROR_CODE_UNSPECIFIED) {
            if (lostConnection(failure)) {
                return new KvUnavailableException(message, address, attempts, failure);
            }
            return fromStatusOnly(status, message, address, attempts, failure);
        }
        return ofCode(code, message, address, attempts, failure);
    }

    /** The exception of a failure the server named by its error code (not unspecified). */
    static KvException ofCode(
            ErrorCode code,
            String message,
            String address,
            int attempts,
            @Nullable Throwable failure) {
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
                Metadata trailers = Status.trailersFromThrowable(failure);
                return new ShardNotOwnedException(
                        message,
                        address,
                        failure,
                        trailers == null ? null : trailers.get(KvErrors.CLUSTER_VIEW_KEY));
            case LIMIT_EXCEEDED:
                return new LimitExceededException(message, address, failure);
            case SHUTTING_DOWN:
                return new KvUnavailableException(message, address, attempts, failure);
            case FILTER_UNAVAILABLE:
                return new FilterUnavailableException(message, address, failure);
            case UNAUTHENTICATED:
                return new AuthenticationException(message, address, failure);
            case PERMISSION_DENIED:
                return new PermissionDeniedException(message, address, failure);
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
            case UNAUTHENTICATED:
                return new AuthenticationException(message, address, failure);
            case PERMISSION_DENIED:
                return new PermissionDeniedException(message, address, failure);
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
