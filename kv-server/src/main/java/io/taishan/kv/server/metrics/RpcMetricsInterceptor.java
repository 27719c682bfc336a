package io.taishan.kv.server.metrics;

import com.google.protobuf.MessageLite;
import io.grpc.Context;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.datapoints.DistributionDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.KvErrors;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceArray;
import javax.annotation.Nullable;

/**
 * Times and counts every call of the service by method and gRPC status, with the request and
 * response bytes. Installed outermost, so calls refused by the authentication interceptor count
 * too.
 *
 * <p>Cost per call, which runs on the event loop for reads: a map lookup by the method's name (no
 * allocation), two small wrapper objects (88 bytes together), two {@code nanoTime} reads, a
 * volatile read of the call's context, and at the end one histogram observation (classic buckets
 * only, no exemplars: a bucket search and a few {@code LongAdder} increments) on a data point
 * cached per method and status. Message sizes come from {@code getSerializedSize()}, which protobuf
 * memoizes and serialization (or the service's own limit check) needs anyway. Only failed calls
 * look at the trailers and look up a labelled counter.
 */
final class RpcMetricsInterceptor implements ServerInterceptor {
    /** From 50 µs (a cached loopback read) to 10 s (a restore or clone of a large shard). */
    static final double[] DURATION_BUCKETS_SECONDS = {
        50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3,
        500e-3, 1, 2.5, 5, 10
    };

    private static final Status.Code[] CODES = Status.Code.values();
    private static final Set<String> ERROR_CODES = new HashSet<>();

    static {
        for (ErrorCode c : ErrorCode.values()) {
            if (c != ErrorCode.UNRECOGNIZED) {
                ERROR_CODES.add(c.name());
            }
        }
    }

    private final Histogram durations;
    private final Counter errors;
    private final Map<String, MethodMetrics> methods;

    RpcMetricsInterceptor(PrometheusRegistry registry, ServiceDescriptor service) {
        this.durations =
                Histogram.builder()
                        .name("taishan_kv_rpc_duration_seconds")
                        .help(
                                "Calls completed, by method and gRPC status code, and how long"
                                        + " each took from its start to its status")
                        .labelNames("method", "code")
                        .classicOnly()
                        .classicUpperBounds(DURATION_BUCKETS_SECONDS)
                        .withoutExemplars()
                        .register(registry);
        this.errors =
                Counter.builder()
                        .name("taishan_kv_rpc_errors_total")
                        .help(
                                "Calls that failed, by method and Taishan error code (the"
                                        + " taishan-error-code trailer; none when the call has"
                                        + " no such trailer, e.g. cancelled)")
                        .labelNames("method", "error")
                        .withoutExemplars()
                        .register(registry);
        Counter received =
                Counter.builder()
                        .name("taishan_kv_rpc_received_bytes_total")
                        .help("Serialized bytes of the request messages received, by method")
                        .labelNames("method")
                        .withoutExemplars()
                        .register(registry);
        Counter sent =
                Counter.builder()
                        .name("taishan_kv_rpc_sent_bytes_total")
                        .help("Serialized bytes of the response messages sent, by method")
                        .labelNames("method")
                        .withoutExemplars()
                        .register(registry);
        Map<String, MethodMetrics> byName = new HashMap<>();
        for (MethodDescriptor<?, ?> m : service.getMethods()) {
            String method = m.getBareMethodName();
            byName.put(
                    m.getFullMethodName(),
                    new MethodMetrics(
                            method, received.labelValues(method), sent.labelValues(method)));
        }
        this.methods = Map.copyOf(byName);
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
            ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        MethodMetrics metrics = methods.get(call.getMethodDescriptor().getFullMethodName());
        if (metrics == null) {
            return next.startCall(call, headers);
        }
        MeteredCall<Q, R> metered = new MeteredCall<>(call, metrics);
        return new MeteredListener<>(next.startCall(metered, headers), metered);
    }

    /** The data points of one method, looked up once. */
    private final class MethodMetrics {
        final String method;
        final CounterDataPoint received;
        final CounterDataPoint sent;

        /** By {@link Status.Code#ordinal()}, created at the first call that ends so. */
        final AtomicReferenceArray<DistributionDataPoint> byCode =
                new AtomicReferenceArray<>(CODES.length);

        MethodMetrics(String method, CounterDataPoint received, CounterDataPoint sent) {
            this.method = method;
            this.received = received;
            this.sent = sent;
        }

        void ended(Status.Code code, long nanos, @Nullable String error) {
            DistributionDataPoint point = byCode.get(code.ordinal());
            if (point == null) {
                // Idempotent: the metric returns the same point for the same labels.
                point = durations.labelValues(method, code.name());
                byCode.set(code.ordinal(), point);
            }
            point.observe(nanos / 1e9);
            if (code != Status.Code.OK) {
                String label =
                        error == null ? "none" : ERROR_CODES.contains(error) ? error : "other";
                errors.labelValues(method, label).inc();
            }
        }
    }

    private static final class MeteredCall<Q, R>
            extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
        @SuppressWarnings("rawtypes")
        private static final AtomicIntegerFieldUpdater<MeteredCall> ENDED =
                AtomicIntegerFieldUpdater.newUpdater(MeteredCall.class, "ended");

        private final MethodMetrics metrics;
        private final long startNanos = System.nanoTime();

        /**
         * The call's own context: cancelled as soon as the client cancels or its deadline passes.
         */
        private final Context context = Context.current();

        private volatile int ended;

        MeteredCall(ServerCall<Q, R> call, MethodMetrics metrics) {
            super(call);
            this.metrics = metrics;
        }

        @Override
        public void sendMessage(R message) {
            if (message instanceof MessageLite m) {
                metrics.sent.inc(m.getSerializedSize());
            }
            super.sendMessage(message);
        }

        @Override
        public void close(Status status, Metadata trailers) {
            if (status.isOk()) {
                // A client that gave up before this answer never gets it: gRPC queues the
                // cancellation behind the running handler, so it is seen here first.
                end(context.isCancelled() ? Status.Code.CANCELLED : Status.Code.OK, null);
            } else {
                end(status.getCode(), trailers.get(KvErrors.ERROR_CODE_KEY));
            }
            super.close(status, trailers);
        }

        /** Once per call: by its close, or by a cancellation that came first. */
        void end(Status.Code code, @Nullable String error) {
            if (ENDED.compareAndSet(this, 0, 1)) {
                metrics.ended(code, System.nanoTime() - startNanos, error);
            }
        }
    }

    private static final class MeteredListener<Q, R>
            extends ForwardingServerCallListener.SimpleForwardingServerCallListener<Q> {
        private final MeteredCall<Q, R> call;

        MeteredListener(ServerCall.Listener<Q> delegate, MeteredCall<Q, R> call) {
            super(delegate);
            this.call = call;
        }

        @Override
        public void onMessage(Q message) {
            if (message instanceof MessageLite m) {
                call.metrics.received.inc(m.getSerializedSize());
            }
            super.onMessage(message);
        }

        @Override
        public void onCancel() {
            // The client cancelled or its deadline passed before the service answered.
            call.end(Status.Code.CANCELLED, null);
            super.onCancel();
        }
    }
}
