package io.taishan.kv.client;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import io.grpc.CallOptions;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.taishan.kv.proto.KvServiceGrpc.KvServiceBlockingStub;
import io.taishan.kv.proto.KvServiceGrpc.KvServiceFutureStub;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Runs one RPC against one node with a deadline per attempt, and repeats it with exponential
 * backoff and jitter when it is idempotent and the failure is transient (UNAVAILABLE or
 * DEADLINE_EXCEEDED). Every failure leaves as a {@link KvException} naming the node.
 *
 * <p>Two forms: {@link #unary} and {@link #unaryAsync} for the data path (reads and writes), which
 * take the method and request themselves and name the call by a function of the request applied
 * only on failure, so that a call allocates nothing of ours beyond its deadline; {@link #call} and
 * {@link #callAsync} take a stub function, for administration and streams, on the bulk lane.
 */
final class RetryingCaller {
    private final long timeoutNanos;
    private final long durableTimeoutNanos;
    private final int maxAttempts;
    private final long initialBackoffNanos;
    private final long maxBackoffNanos;
    private final ScheduledExecutorService scheduler;

    RetryingCaller(KvClientConfig config, ScheduledExecutorService scheduler) {
        this.timeoutNanos = config.requestTimeout().toNanos();
        this.durableTimeoutNanos = config.durableCallTimeout().toNanos();
        this.maxAttempts = config.maxAttempts();
        this.initialBackoffNanos = config.initialBackoff().toNanos();
        this.maxBackoffNanos = Math.max(initialBackoffNanos, config.maxBackoff().toNanos());
        this.scheduler = scheduler;
    }

    /**
     * Calls on the caller's thread (as gRPC's blocking stub does: no hop to another thread).
     *
     * @param what names the call in a failure's message; applied to {@code request} only then
     */
    <Q, R> R unary(
            KvNode node,
            KvNode.Lane lane,
            MethodDescriptor<Q, R> method,
            Q request,
            boolean idempotent,
            Function<? super Q, String> what) {
        int allowed = idempotent ? maxAttempts : 1;
        for (int attempt = 1; ; attempt++) {
            try {
                return ClientCalls.blockingUnaryCall(
                        node.connections().channel(lane), method, deadlineNow(), request);
            } catch (StatusRuntimeException e) {
                if (attempt >= allowed || !GrpcErrors.isRetryable(e)) {
                    throw GrpcErrors.toKvException(e, node.address(), what.apply(request), attempt);
                }
                prepareRetry(node, e.getStatus());
                LockSupport.parkNanos(backoffNanos(attempt));
                if (Thread.currentThread().isInterrupted()) {
                    // Flink cancels a task by interrupting it: stop retrying, keep the flag.
                    throw GrpcErrors.toKvException(e, node.address(), what.apply(request), attempt);
                }
            }
        }
    }

    /**
     * {@link #unary} without blocking; the returned future fails with the {@link KvException}
     * itself (not wrapped) and completes on a gRPC thread.
     */
    <Q, R> CompletableFuture<R> unaryAsync(
            KvNode node,
            KvNode.Lane lane,
            MethodDescriptor<Q, R> method,
            Q request,
            boolean idempotent,
            Function<? super Q, String> what) {
        CompletableFuture<R> result = new CompletableFuture<>();
        attemptUnaryAsync(
                node, lane, method, request, what, idempotent ? maxAttempts : 1, 1, result);
        return result;
    }

    private <Q, R> void attemptUnaryAsync(
            KvNode node,
            KvNode.Lane lane,
            MethodDescriptor<Q, R> method,
            Q request,
            Function<? super Q, String> what,
            int allowed,
            int attempt,
            CompletableFuture<R> result) {
        ListenableFuture<R> call;
        try {
            call =
                    ClientCalls.futureUnaryCall(
                            node.connections().channel(lane).newCall(method, deadlineNow()),
                            request);
        } catch (RuntimeException e) {
            result.completeExceptionally(
                    GrpcErrors.toKvException(e, node.address(), what.apply(request), attempt));
            return;
        }
        Futures.addCallback(
                call,
                new FutureCallback<R>() {
                    @Override
                    public void onSuccess(R response) {
                        result.complete(response);
                    }

                    @Override
                    public void onFailure(Throwable failure) {
                        if (attempt >= allowed || !GrpcErrors.isRetryable(failure)) {
                            result.completeExceptionally(
                                    GrpcErrors.toKvException(
                                            failure, node.address(), what.apply(request), attempt));
                            return;
                        }
                        prepareRetry(node, Status.fromThrowable(failure));
                        try {
                            scheduler.schedule(
                                    () ->
                                            attemptUnaryAsync(
                                                    node,
                                                    lane,
                                                    method,
                                                    request,
                                                    what,
                                                    allowed,
                                                    attempt + 1,
                                                    result),
                                    backoffNanos(attempt),
                                    TimeUnit.NANOSECONDS);
                        } catch (RejectedExecutionException closed) {
                            result.completeExceptionally(
                                    GrpcErrors.toKvException(
                                            failure, node.address(), what.apply(request), attempt));
                        }
                    }
                },
                MoreExecutors.directExecutor());
    }

    private CallOptions deadlineNow() {
        return CallOptions.DEFAULT.withDeadlineAfter(timeoutNanos, TimeUnit.NANOSECONDS);
    }

    /** Calls on the caller's thread, on the bulk lane. */
    <R> R call(
            KvNode node,
            Supplier<String> what,
            boolean idempotent,
            Function<KvServiceBlockingStub, R> rpc) {
        int allowed = idempotent ? maxAttempts : 1;
        for (int attempt = 1; ; attempt++) {
            try {
                return rpc.apply(
                        node.connections()
                                .bulkBlockingStub()
                                .withDeadlineAfter(timeoutNanos, TimeUnit.NANOSECONDS));
            } catch (StatusRuntimeException e) {
                if (attempt >= allowed || !GrpcErrors.isRetryable(e)) {
                    throw GrpcErrors.toKvException(e, node.address(), what.get(), attempt);
                }
                prepareRetry(node, e.getStatus());
                LockSupport.parkNanos(backoffNanos(attempt));
                if (Thread.currentThread().isInterrupted()) {
                    // Flink cancels a task by interrupting it: stop retrying, keep the flag.
                    throw GrpcErrors.toKvException(e, node.address(), what.get(), attempt);
                }
            }
        }
    }

    /**
     * Calls without blocking, on the bulk lane; the returned future fails with the {@link
     * KvException} itself (not wrapped) and completes on a gRPC thread.
     */
    <R> CompletableFuture<R> callAsync(
            KvNode node,
            Supplier<String> what,
            boolean idempotent,
            Function<KvServiceFutureStub, ListenableFuture<R>> rpc) {
        return callAsync(node, what, idempotent, timeoutNanos, rpc);
    }

    /**
     * {@link #callAsync} with a deadline of its own (a call that moves files to or from checkpoint
     * storage takes minutes). Cancelling the returned future cancels the call under way, which the
     * server then stops.
     */
    <R> CompletableFuture<R> callAsync(
            KvNode node,
            Supplier<String> what,
            boolean idempotent,
            long deadlineNanos,
            Function<KvServiceFutureStub, ListenableFuture<R>> rpc) {
        CompletableFuture<R> result = new CompletableFuture<>();
        attemptAsync(node, what, idempotent ? maxAttempts : 1, deadlineNanos, rpc, 1, result);
        return result;
    }

    private <R> void attemptAsync(
            KvNode node,
            Supplier<String> what,
            int allowed,
            long deadlineNanos,
            Function<KvServiceFutureStub, ListenableFuture<R>> rpc,
            int attempt,
            CompletableFuture<R> result) {
        if (result.isDone()) {
            return; // cancelled by the caller while a retry waited
        }
        ListenableFuture<R> call;
        try {
            call =
                    rpc.apply(
                            node.connections()
                                    .bulkFutureStub()
                                    .withDeadlineAfter(deadlineNanos, TimeUnit.NANOSECONDS));
        } catch (RuntimeException e) {
            result.completeExceptionally(
                    GrpcErrors.toKvException(e, node.address(), what.get(), attempt));
            return;
        }
        Futures.addCallback(
                call,
                new FutureCallback<R>() {
                    @Override
                    public void onSuccess(R response) {
                        result.complete(response);
                    }

                    @Override
                    public void onFailure(Throwable failure) {
                        Status status = Status.fromThrowable(failure);
                        if (attempt >= allowed || !GrpcErrors.isRetryable(failure)) {
                            result.completeExceptionally(
                                    GrpcErrors.toKvException(
                                            failure, node.address(), what.get(), attempt));
                            return;
                        }
                        prepareRetry(node, status);
                        try {
                            scheduler.schedule(
                                    () ->
                                            attemptAsync(
                                                    node,
                                                    what,
                                                    allowed,
                                                    deadlineNanos,
                                                    rpc,
                                                    attempt + 1,
                                                    result),
                                    backoffNanos(attempt),
                                    TimeUnit.NANOSECONDS);
                        } catch (RejectedExecutionException closed) {
                            result.completeExceptionally(
                                    GrpcErrors.toKvException(
                                            failure, node.address(), what.get(), attempt));
                        }
                    }
                },
                MoreExecutors.directExecutor());
        result.whenComplete(
                (r, e) -> {
                    if (result.isCancelled()) {
                        call.cancel(true);
                    }
                });
    }

    long timeoutNanos() {
        return timeoutNanos;
    }

    /** See {@link KvClientConfig#durableCallTimeout()}. */
    long durableTimeoutNanos() {
        return durableTimeoutNanos;
    }

    int maxAttempts() {
        return maxAttempts;
    }

    ScheduledExecutorService scheduler() {
        return scheduler;
    }

    /** See {@link KvNode.Connections#resetConnectBackoff}. */
    static void prepareRetry(KvNode node, Status status) {
        if (status.getCode() == Status.Code.UNAVAILABLE) {
            node.connections().resetConnectBackoff();
        }
    }

    /** Exponential in the attempt number, capped, with "equal jitter": in [d/2, d]. */
    long backoffNanos(int failedAttempt) {
        int shift = Math.min(failedAttempt - 1, 30);
        long exponential = initialBackoffNanos << shift;
        long capped =
                exponential < 0 || (exponential >> shift) != initialBackoffNanos
                        ? maxBackoffNanos
                        : Math.min(exponential, maxBackoffNanos);
        long half = capped / 2;
        return half + ThreadLocalRandom.current().nextLong(capped - half + 1);
    }
}
