package io.taishan.kv.server.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.taishan.kv.proto.KvServiceGrpc;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.Test;

/** Which calls run on the network thread and which on the pool. */
class CallExecutorsTest {
    private static final Set<String> INLINE = Set.of("Get", "MultiGet", "Health", "ClusterInfo");

    @Test
    void cheapReadsRunInlineEverythingElseOnThePool() {
        try (CallExecutors executors = new CallExecutors(2)) {
            ServerServiceDefinition service =
                    KvServiceGrpc.bindService(new KvServiceGrpc.KvServiceImplBase() {});
            List<String> pooled = new ArrayList<>();
            for (var method : service.getMethods()) {
                MethodDescriptor<?, ?> descriptor = method.getMethodDescriptor();
                Executor executor = executors.getExecutor(call(descriptor), new Metadata());
                if (INLINE.contains(descriptor.getBareMethodName())) {
                    assertThat(executor).as(descriptor.getBareMethodName()).isNull();
                } else {
                    assertThat(executor)
                            .as(descriptor.getBareMethodName())
                            .isSameAs(executors.pool());
                    pooled.add(descriptor.getBareMethodName());
                }
            }
            assertThat(pooled)
                    .contains(
                            "Write",
                            "Scan",
                            "Snapshot",
                            "Restore",
                            "Clone",
                            "FetchFilter",
                            "OpenShard",
                            "CreateTable");
        }
    }

    private static <Q, R> ServerCall<Q, R> call(MethodDescriptor<Q, R> method) {
        return new ServerCall<>() {
            @Override
            public void request(int numMessages) {}

            @Override
            public void sendHeaders(Metadata headers) {}

            @Override
            public void sendMessage(R message) {}

            @Override
            public void close(Status status, Metadata trailers) {}

            @Override
            public boolean isCancelled() {
                return false;
            }

            @Override
            public Attributes getAttributes() {
                return Attributes.EMPTY;
            }

            @Override
            public MethodDescriptor<Q, R> getMethodDescriptor() {
                return method;
            }
        };
    }
}
