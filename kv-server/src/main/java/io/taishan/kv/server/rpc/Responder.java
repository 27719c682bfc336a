package io.taishan.kv.server.rpc;

import io.grpc.stub.StreamObserver;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.server.storage.KvServerException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
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
