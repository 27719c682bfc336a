package io.taishan.kv.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.KvErrors;
import java.nio.channels.ClosedChannelException;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;

class GrpcErrorsTest {
    @Test
    void authFailuresAreTypedAndNeverRetried() {
        Metadata trailers = new Metadata();
        trailers.put(KvErrors.ERROR_CODE_KEY, "PERMISSION_DENIED");
        StatusRuntimeException denied =
                Status.PERMISSION_DENIED.withDescription("nope").asRuntimeException(trailers);
        assertThat(GrpcErrors.toKvException(denied, "h:1", "Get", 1))
                .isInstanceOf(PermissionDeniedException.class)
                .extracting(KvException::code)
                .isEqualTo(ErrorCode.PERMISSION_DENIED);
        assertThat(GrpcErrors.isRetryable(denied)).isFalse();

        // Without our trailer too: a proxy or gRPC itself may answer so.
        StatusRuntimeException bare = Status.UNAUTHENTICATED.asRuntimeException();
        assertThat(GrpcErrors.toKvException(bare, "h:1", "Get", 1))
                .isInstanceOf(AuthenticationException.class);
        assertThat(
                        GrpcErrors.toKvException(
                                Status.PERMISSION_DENIED.asRuntimeException(), "h:1", "Get", 1))
                .isInstanceOf(PermissionDeniedException.class);
        assertThat(GrpcErrors.isRetryable(bare)).isFalse();
    }

    @Test
    void aFailedHandshakeIsAnAuthenticationFailureNotUnavailability() {
        StatusRuntimeException handshake =
                Status.UNAVAILABLE
                        .withDescription("io exception")
                        .withCause(new SSLHandshakeException("PKIX path building failed"))
                        .asRuntimeException();
        assertThat(GrpcErrors.isRetryable(handshake)).isFalse();
        assertThat(GrpcErrors.toKvException(handshake, "h:1", "ClusterInfo", 1))
                .isInstanceOf(AuthenticationException.class)
                .hasMessageContaining("TLS handshake failed: PKIX path building failed")
                .hasMessageContaining("does not chain to a CA this client trusts");
        // A server that is just down is still unavailable, and retried.
        StatusRuntimeException down = Status.UNAVAILABLE.asRuntimeException();
        assertThat(GrpcErrors.isRetryable(down)).isTrue();
        assertThat(GrpcErrors.toKvException(down, "h:1", "Get", 3))
                .isInstanceOf(KvUnavailableException.class);
    }

    @Test
    void aConnectionClosedUnderACallIsUnavailabilityAndRetried() {
        // What Netty's transport reported once when the server was killed during a Get.
        StatusRuntimeException closed =
                Status.UNKNOWN
                        .withDescription("channel closed")
                        .withCause(new ClosedChannelException())
                        .asRuntimeException();
        assertThat(GrpcErrors.isRetryable(closed)).isTrue();
        assertThat(GrpcErrors.toKvException(closed, "h:1", "Get", 3))
                .isInstanceOf(KvUnavailableException.class)
                .hasMessageContaining("channel closed");
        // Any other UNKNOWN is not known to be transient.
        StatusRuntimeException unknown =
                Status.UNKNOWN.withDescription("boom").asRuntimeException();
        assertThat(GrpcErrors.isRetryable(unknown)).isFalse();
        assertThat(GrpcErrors.toKvException(unknown, "h:1", "Get", 1))
                .isNotInstanceOf(KvUnavailableException.class);
    }
}
