package io.taishan.kv.server.metrics;

import com.google.protobuf.ByteString;
import io.grpc.Attributes;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.Status;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.GetResponse;
import io.taishan.kv.proto.KvServiceGrpc;
import java.lang.management.ManagementFactory;

/**
 * Not a test: what {@link RpcMetricsInterceptor} adds to one call, in time and allocated bytes,
 * measured on gRPC's own call interfaces with a call that does nothing else (so the figures are the
 * interceptor's alone, without the network, the service or RocksDB). Compare with a real {@code
 * Get}'s round trip (~130–300 µs here, {@code docs/benchmarks.md}).
 *
 * <pre>
 * java -cp $CP io.taishan.kv.server.metrics.RpcMetricsOverheadProbe [calls per round]
 * </pre>
 */
public final class RpcMetricsOverheadProbe {
    private RpcMetricsOverheadProbe() {}

    public static void main(String[] args) {
        int calls = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
        RpcMetricsInterceptor interceptor =
                new RpcMetricsInterceptor(
                        new PrometheusRegistry(), KvServiceGrpc.getServiceDescriptor());
        GetRequest request =
                GetRequest.newBuilder().setTable("t").setKey(ByteString.copyFromUtf8("k")).build();
        GetResponse response =
                GetResponse.newBuilder()
                        .setFound(true)
                        .setValue(ByteString.copyFrom(new byte[100]))
                        .build();
        ServerCallHandler<GetRequest, GetResponse> handler =
                (call, headers) ->
                        new ServerCall.Listener<>() {
                            @Override
                            public void onHalfClose() {
                                call.sendMessage(response);
                                call.close(Status.OK, new Metadata());
                            }
                        };
        NoopCall call = new NoopCall();
        Metadata headers = new Metadata();
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().getId();
        for (int round = 0; round < 6; round++) {
            long bytes0 = threads.getThreadAllocatedBytes(tid);
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                ServerCall.Listener<GetRequest> l = handler.startCall(call, headers);
                l.onMessage(request);
                l.onHalfClose();
            }
            long t1 = System.nanoTime();
            long bytes1 = threads.getThreadAllocatedBytes(tid);
            for (int i = 0; i < calls; i++) {
                ServerCall.Listener<GetRequest> l =
                        interceptor.interceptCall(call, headers, handler);
                l.onMessage(request);
                l.onHalfClose();
            }
            long t2 = System.nanoTime();
            long bytes2 = threads.getThreadAllocatedBytes(tid);
            System.out.printf(
                    "round %d: without %.1f ns, %.0f B per call; with %.1f ns, %.0f B per call;"
                            + " the interceptor adds %.1f ns and %.0f B%n",
                    round,
                    (t1 - t0) / (double) calls,
                    (bytes1 - bytes0) / (double) calls,
                    (t2 - t1) / (double) calls,
                    (bytes2 - bytes1) / (double) calls,
                    ((t2 - t1) - (t1 - t0)) / (double) calls,
                    ((bytes2 - bytes1) - (bytes1 - bytes0)) / (double) calls);
        }
        if (call.closes != 12L * calls) {
            throw new AssertionError("closes " + call.closes);
        }
    }

    /** A call that only counts its closes. */
    private static final class NoopCall extends ServerCall<GetRequest, GetResponse> {
        long closes;

        @Override
        public void request(int numMessages) {}

        @Override
        public void sendHeaders(Metadata headers) {}

        @Override
        public void sendMessage(GetResponse message) {}

        @Override
        public void close(Status status, Metadata trailers) {
            closes++;
        }

        @Override
        public boolean isCancelled() {
            return false;
        }

        @Override
        public Attributes getAttributes() {
            return Attributes.EMPTY;
        }

        @Override
        public MethodDescriptor<GetRequest, GetResponse> getMethodDescriptor() {
            return KvServiceGrpc.getGetMethod();
        }
    }
}
