package io.taishan.kv.client;

import com.google.protobuf.ByteString;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ClientResponseObserver;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.GetRequest;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.ReadValueResponse;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.UploadHeader;
import io.taishan.kv.proto.UploadValueRequest;
import io.taishan.kv.proto.UploadValueResponse;
import io.taishan.kv.proto.ValueHeader;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.protocol.Wire;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import javax.annotation.Nullable;

/**
 * Moves values larger than the server's inline limit in chunks, on a node's bulk connection (so a
 * big transfer never queues in front of the small reads on the read connections): {@code ReadValue}
 * into one array of the value's size, {@code UploadValue} from the caller's bytes without copying
 * them (each chunk is a slice of them, sent when the transport is ready).
 *
 * <p>Both are idempotent and retried as a whole on transient failures. A transfer's deadline grows
 * with its size: the request timeout plus one second per {@link #MIN_BYTES_PER_SECOND} bytes, so a
 * 512 MiB value gets 64 s more than a small call, and a hung server still ends it.
 */
final class LargeValueTransfers {
    /** The slowest transfer rate a large value's deadline allows for. */
    static final long MIN_BYTES_PER_SECOND = 8L << 20;

    private final RetryingCaller caller;
    private final KvLimits limits;

    LargeValueTransfers(RetryingCaller caller, KvLimits limits) {
        this.caller = caller;
        this.limits = limits;
    }

    private long deadlineNanos(long valueBytes) {
        return caller.timeoutNanos()
                + TimeUnit.SECONDS.toNanos(1) * Math.max(0, valueBytes) / MIN_BYTES_PER_SECOND;
    }

    /** The value, or null if the key is absent; blocks. */
    @Nullable
    byte[] read(KvNode node, GetRequest request, Supplier<String> what) {
        int allowed = caller.maxAttempts();
        for (int attempt = 1; ; attempt++) {
            // A stream left unread (a bad answer) would run until its deadline.
            Context.CancellableContext context = Context.current().withCancellation();
            Context previous = context.attach();
            try {
                Iterator<ReadValueResponse> responses =
                        ClientCalls.blockingServerStreamingCall(
                                node.connections().channel(KvNode.Lane.BULK),
                                KvServiceGrpc.getReadValueMethod(),
                                CallOptions.DEFAULT.withDeadlineAfter(
                                        deadlineNanos(limits.maxValueBytes()),
                                        TimeUnit.NANOSECONDS),
                                request);
                return receive(responses, node, what);
            } catch (StatusRuntimeException e) {
                if (attempt >= allowed || !GrpcErrors.isRetryable(e)) {
                    throw GrpcErrors.toKvException(e, node.address(), what.get(), attempt);
                }
                RetryingCaller.prepareRetry(node, e.getStatus());
                LockSupport.parkNanos(caller.backoffNanos(attempt));
                if (Thread.currentThread().isInterrupted()) {
                    throw GrpcErrors.toKvException(e, node.address(), what.get(), attempt);
                }
            } finally {
                context.detach(previous);
                context.cancel(null);
            }
        }
    }

    @Nullable
    private byte[] receive(
            Iterator<ReadValueResponse> responses, KvNode node, Supplier<String> what) {
        if (!responses.hasNext()) {
            throw bad(node, what, "the stream ended before its header");
        }
        ReadValueResponse first = responses.next();
        if (!first.hasHeader()) {
            throw bad(node, what, "the stream did not start with a header");
        }
        ValueHeader header = first.getHeader();
        if (!header.getFound()) {
            return null;
        }
        long size = header.getValueBytes();
        if (size < 0 || size > Integer.MAX_VALUE - 8) {
            throw bad(node, what, "the header announced " + size + " bytes");
        }
        byte[] value = new byte[(int) size];
        int filled = 0;
        while (responses.hasNext()) {
            ReadValueResponse next = responses.next();
            ByteString chunk = next.getChunk();
            if (next.hasHeader() || chunk.size() > value.length - filled) {
                throw bad(node, what, "more than the " + size + " bytes its header announced");
            }
            chunk.copyTo(value, filled);
            filled += chunk.size();
        }
        if (filled != value.length) {
            throw bad(node, what, "the stream ended after " + filled + " of " + size + " bytes");
        }
        return value;
    }

    private static KvException bad(KvNode node, Supplier<String> what, String message) {
        return new KvException(
                ErrorCode.ERROR_CODE_UNSPECIFIED,
                what.get() + ": " + message,
                node.address(),
                null);
    }

    /**
     * Stages {@code value} on the node for a Write to {@code shard} of {@code table}; the future
     * completes with its id on a gRPC thread, or fails with the {@link KvException}.
     */
    CompletableFuture<Long> upload(
            KvNode node, String table, ShardRef shard, ByteString value, Supplier<String> what) {
        CompletableFuture<Long> result = new CompletableFuture<>();
        attemptUpload(node, table, shard, value, what, 1, result);
        return result;
    }

    private void attemptUpload(
            KvNode node,
            String table,
            ShardRef shard,
            ByteString value,
            Supplier<String> what,
            int attempt,
            CompletableFuture<Long> result) {
        ClientCall<UploadValueRequest, UploadValueResponse> call;
        try {
            call =
                    node.connections()
                            .channel(KvNode.Lane.BULK)
                            .newCall(
                                    KvServiceGrpc.getUploadValueMethod(),
                                    CallOptions.DEFAULT.withDeadlineAfter(
                                            deadlineNanos(value.size()), TimeUnit.NANOSECONDS));
        } catch (RuntimeException e) {
            result.completeExceptionally(
                    GrpcErrors.toKvException(e, node.address(), what.get(), attempt));
            return;
        }
        Sender sender =
                new Sender(table, shard, value) {
                    @Override
                    void failed(Throwable failure) {
                        if (attempt >= caller.maxAttempts() || !GrpcErrors.isRetryable(failure)) {
                            result.completeExceptionally(
                                    GrpcErrors.toKvException(
                                            failure, node.address(), what.get(), attempt));
                            return;
                        }
                        RetryingCaller.prepareRetry(node, Status.fromThrowable(failure));
                        try {
                            caller.scheduler()
                                    .schedule(
                                            () ->
                                                    attemptUpload(
                                                            node,
                                                            table,
                                                            shard,
                                                            value,
                                                            what,
                                                            attempt + 1,
                                                            result),
                                            caller.backoffNanos(attempt),
                                            TimeUnit.NANOSECONDS);
                        } catch (RejectedExecutionException closed) {
                            result.completeExceptionally(
                                    GrpcErrors.toKvException(
                                            failure, node.address(), what.get(), attempt));
                        }
                    }

                    @Override
                    void staged(long id) {
                        result.complete(id);
                    }
                };
        ClientCalls.asyncClientStreamingCall(call, sender);
        sender.pump();
    }

    /**
     * One upload: the header, then slices of the value, each only while the call is ready (the
     * server asks for the next chunk only once it has room for the value), then the half-close.
     */
    private abstract static class Sender
            implements ClientResponseObserver<UploadValueRequest, UploadValueResponse> {
        private final String table;
        private final ShardRef shard;
        private final ByteString value;
        @Nullable private ClientCallStreamObserver<UploadValueRequest> requests;
        private boolean headerSent;
        private int sent;
        private boolean finished;
        private long stagedId;
        private boolean answered;

        Sender(String table, ShardRef shard, ByteString value) {
            this.table = table;
            this.shard = shard;
            this.value = value;
        }

        abstract void failed(Throwable failure);

        abstract void staged(long id);

        @Override
        public void beforeStart(ClientCallStreamObserver<UploadValueRequest> requestStream) {
            this.requests = requestStream;
            requestStream.setOnReadyHandler(this::pump);
        }

        synchronized void pump() {
            ClientCallStreamObserver<UploadValueRequest> out = requests;
            if (out == null || finished) {
                return;
            }
            while (out.isReady() && !finished) {
                if (!headerSent) {
                    headerSent = true;
                    out.onNext(
                            UploadValueRequest.newBuilder()
                                    .setTable(table)
                                    .setHeader(
                                            UploadHeader.newBuilder()
                                                    .setShard(shard)
                                                    .setValueBytes(value.size()))
                                    .build());
                } else if (sent < value.size()) {
                    int n = Math.min(Wire.CHUNK_BYTES, value.size() - sent);
                    // A slice shares the caller's bytes: nothing is copied before gRPC frames it.
                    out.onNext(
                            UploadValueRequest.newBuilder()
                                    .setTable(table)
                                    .setChunk(value.substring(sent, sent + n))
                                    .build());
                    sent += n;
                } else {
                    finished = true;
                    out.onCompleted();
                }
            }
        }

        @Override
        public void onNext(UploadValueResponse response) {
            stagedId = response.getStagedValueId();
            answered = true;
        }

        @Override
        public void onError(Throwable t) {
            synchronized (this) {
                finished = true;
            }
            failed(t);
        }

        @Override
        public void onCompleted() {
            if (!answered) {
                failed(
                        Status.INTERNAL
                                .withDescription("UploadValue answered no staged value id")
                                .asRuntimeException());
                return;
            }
            staged(stagedId);
        }
    }
}
