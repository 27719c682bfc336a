package io.taishan.kv.server.rpc;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.server.storage.KvServerException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How every call answers: its handler's result as the one response, or its failure as a status with
 * an error code ({@link ErrorStatus}), logged as a refusal or, for a storage error or an unexpected
 * exception, as an error. Once the node began shutting down every call but Health is refused with
 * SHUTTING_DOWN.
 */
public final class Responder {
    // Under the service's name: these lines are the outcome of its calls.
    private static final Logger LOG = LoggerFactory.getLogger(KvGrpcService.class);

    /** A call that may run on a network thread, where it must not wait. */
    @FunctionalInterface
    interface InlineCall<T> {
        /**
         * @param inline whether on a network thread
         * @return the answer, or null (only when {@code inline}) if it would have to wait
         */
        @Nullable
        T run(boolean inline);
    }

    /**
     * A call that goes on after its handler returned (a transfer to checkpoint storage, minutes
     * long, on threads of its own): its answer, and how to stop it when the client cancels.
     */
    record LongCall<T>(CompletableFuture<T> result, Runnable cancel) {
        static <T> LongCall<T> done(T value) {
            return new LongCall<>(CompletableFuture.completedFuture(value), () -> {});
        }
    }

    private final ShardOwnership ownership;
    private final Executor pool;
    private volatile boolean shuttingDown;

    /**
     * @param pool where a call that would wait on a network thread goes on ({@link
     *     CallExecutors#pool})
     */
    Responder(ShardOwnership ownership, Executor pool) {
        this.ownership = ownership;
        this.pool = pool;
    }

    /** From now on every call but Health fails with SHUTTING_DOWN. */
    void beginShutdown() {
        shuttingDown = true;
    }

    boolean shuttingDown() {
        return shuttingDown;
    }

    /** Fails with SHUTTING_DOWN once the node began shutting down. */
    void checkServing() {
        if (shuttingDown) {
            throw KvServerException.shuttingDown();
        }
    }

    /** Answers with what {@code call} returns; refused while shutting down. */
    <T> void respond(StreamObserver<T> observer, String method, Supplier<T> call) {
        respond(observer, method, true, call);
    }

    /** Answers with what {@code call} returns, also while shutting down. */
    <T> void respondAlways(StreamObserver<T> observer, String method, Supplier<T> call) {
        respond(observer, method, false, call);
    }

    /**
     * Runs {@code call} here, on the network thread; if it answers null, runs it again on the call
     * pool, where waiting holds up no other call. Reads only: they may run twice.
     */
    <T> void respondInline(StreamObserver<T> observer, String method, InlineCall<T> call) {
        T result;
        try {
            checkServing();
            result = call.run(true);
        } catch (RuntimeException e) {
            fail(observer, method, e);
            return;
        }
        if (result != null) {
            observer.onNext(result);
            observer.onCompleted();
            return;
        }
        try {
            pool.execute(() -> respond(observer, method, true, () -> call.run(false)));
        } catch (RejectedExecutionException e) {
            observer.onError(ErrorStatus.of(KvServerException.shuttingDown()));
        }
    }

    /**
     * Starts {@code call} here and answers once its result completes, on the thread that completes
     * it, holding no thread meanwhile. A client that cancels (or whose deadline passes) stops it;
     * it is then answered no more. Refused while shutting down.
     */
    <T> void respondLater(
            ServerCallStreamObserver<T> observer, String method, Supplier<LongCall<T>> call) {
        AtomicBoolean cancelled = new AtomicBoolean();
        AtomicReference<Runnable> stop = new AtomicReference<>();
        // Set before the handler returns, as gRPC requires; the call may not exist yet.
        observer.setOnCancelHandler(
                () -> {
                    cancelled.set(true);
                    Runnable s = stop.get();
                    if (s != null) {
                        s.run();
                    }
                });
        LongCall<T> started;
        try {
            checkServing();
            started = call.get();
        } catch (RuntimeException e) {
            fail(observer, method, e);
            return;
        }
        stop.set(started.cancel());
        if (cancelled.get()) {
            started.cancel().run();
        }
        started.result()
                .whenComplete(
                        (result, failure) -> {
                            if (cancelled.get()) {
                                return; // nobody to answer
                            }
                            try {
                                if (failure != null) {
                                    fail(observer, method, unwrap(failure));
                                } else {
                                    observer.onNext(result);
                                    observer.onCompleted();
                                }
                            } catch (RuntimeException e) {
                                // Cancelled between the check and the answer.
                                LOG.debug("{} ended before its answer: {}", method, e.toString());
                            }
                        });
    }

    private static RuntimeException unwrap(Throwable failure) {
        Throwable cause = failure instanceof CompletionException ? failure.getCause() : failure;
        return cause instanceof RuntimeException runtime
                ? runtime
                : new IllegalStateException(String.valueOf(cause), cause);
    }

    private <T> void respond(
            StreamObserver<T> observer,
            String method,
            boolean refuseWhenShuttingDown,
            Supplier<T> call) {
        T result;
        try {
            if (refuseWhenShuttingDown) {
                checkServing();
            }
            result = call.get();
        } catch (RuntimeException e) {
            fail(observer, method, e);
            return;
        }
        observer.onNext(result);
        observer.onCompleted();
    }

    /** Ends the call with {@code failure}'s status, naming this node when it was unexpected. */
    public void fail(StreamObserver<?> observer, String method, RuntimeException failure) {
        if (failure instanceof KvServerException e) {
            if (e.code() == ErrorCode.STORAGE_ERROR) {
                LOG.error("{} failed: {}", method, e.getMessage(), e);
            } else {
                LOG.debug("{} refused: {}", method, e.getMessage());
            }
            observer.onError(ErrorStatus.of(e));
            return;
        }
        LOG.error("{} failed unexpectedly", method, failure);
        observer.onError(
                ErrorStatus.of(
                        ErrorCode.STORAGE_ERROR,
                        method + " failed on node " + ownership.selfAddress() + ": " + failure));
    }

    /** Ends the call with SHUTTING_DOWN: its executor no longer takes work. */
    void rejected(StreamObserver<?> observer) {
        observer.onError(ErrorStatus.of(KvServerException.shuttingDown()));
    }
}
