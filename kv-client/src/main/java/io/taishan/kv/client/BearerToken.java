package io.taishan.kv.client;

import io.grpc.CallCredentials;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.taishan.kv.protocol.BearerTokens;
import java.util.concurrent.Executor;

/**
 * The client's bearer token as gRPC call credentials, put on every call of a channel by {@link
 * #interceptor()}. Applied synchronously on the calling thread: the header is a constant, so a call
 * pays one small {@link Metadata} and no executor hand-off.
 */
final class BearerToken extends CallCredentials {
    private final String headerValue;

    BearerToken(String token) {
        this.headerValue = BearerTokens.headerValue(token);
    }

    @Override
    public void applyRequestMetadata(
            RequestInfo requestInfo, Executor appExecutor, MetadataApplier applier) {
        Metadata headers = new Metadata();
        headers.put(BearerTokens.AUTHORIZATION, headerValue);
        applier.apply(headers);
    }

    /** Adds these credentials to every call made through the channel it intercepts. */
    ClientInterceptor interceptor() {
        CallCredentials credentials = this;
        return new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(
                    MethodDescriptor<Q, R> method, CallOptions callOptions, Channel next) {
                return next.newCall(method, callOptions.withCallCredentials(credentials));
            }
        };
    }

    @Override
    public String toString() {
        return "BearerToken[hidden]";
    }
}
