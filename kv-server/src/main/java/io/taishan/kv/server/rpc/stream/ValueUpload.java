package io.taishan.kv.server.rpc.stream;

import com.google.protobuf.ByteString;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.UploadValueRequest;
import io.taishan.kv.proto.UploadValueResponse;
import io.taishan.kv.server.rpc.Responder;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.Shard;
import java.util.concurrent.RejectedExecutionException;
import javax.annotation.Nullable;

/**
 * One UploadValue call: receives one value into the staging area. The header's size is reserved in
 * the budget before any chunk is asked for (inbound flow control: the client cannot send what the
 * server has no room for), waiting on a large-value thread when it does not fit at once. gRPC calls
 * it serially, a large-value thread may too (the grant).
 */
public final class ValueUpload implements StreamObserver<UploadValueRequest> {
    /** What a stream's first message must pass: it names the shard the value is for. */
    @FunctionalInterface
    public interface HeaderCheck {
        /**
         * @return the shard the header names, once the server serves, the message is a header, the
         *     shard is this node's and the size is within the limits
         * @throws KvServerException with the error the client gets otherwise
         */
        Shard check(UploadValueRequest first);
    }

    private final ServerCallStreamObserver<UploadValueResponse> call;
    private final LargeValueBudget budget;
    private final HeaderCheck headerCheck;
    private final Responder responder;
    @Nullable private String table;
    private int shard;
    @Nullable private byte[] value;
    private int filled;
    private long reserved;
    private boolean done;

    private ValueUpload(
            ServerCallStreamObserver<UploadValueResponse> call,
            LargeValueBudget budget,
            HeaderCheck headerCheck,
            Responder responder) {
        this.call = call;
        this.budget = budget;
        this.headerCheck = headerCheck;
        this.responder = responder;
    }

    /** Starts the call: asks for its first message only, the header. */
    public static ValueUpload start(
            ServerCallStreamObserver<UploadValueResponse> call,
            LargeValueBudget budget,
            HeaderCheck headerCheck,
            Responder responder) {
        call.disableAutoRequest();
        ValueUpload upload = new ValueUpload(call, budget, headerCheck, responder);
        call.setOnCancelHandler(upload::abandon);
        call.request(1);
        return upload;
    }

    @Override
    public synchronized void onNext(UploadValueRequest request) {
        if (done) {
            return;
        }
        try {
            if (table == null) {
                header(request);
            } else {
                chunk(request);
            }
        } catch (RuntimeException e) {
            abandon();
            responder.fail(call, "UploadValue", e);
        }
    }

    private void header(UploadValueRequest request) {
        Shard s = headerCheck.check(request);
        long size = request.getHeader().getValueBytes();
        table = s.tableName();
        shard = s.shard();
        if (budget.tryReserve(size)) {
            granted(size);
            return;
        }
        try {
            budget.executor()
                    .execute(
                            () -> {
                                try {
                                    if (budget.reserve(size, call::isCancelled)) {
                                        synchronized (this) {
                                            if (done) {
                                                budget.release(size);
                                            } else {
                                                granted(size);
                                            }
                                        }
                                    }
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                } catch (RuntimeException e) {
                                    synchronized (this) {
                                        abandon();
                                        responder.fail(call, "UploadValue", e);
                                    }
                                }
                            });
        } catch (RejectedExecutionException e) {
            throw KvServerException.shuttingDown();
        }
    }

    private void granted(long size) {
        reserved = size;
        try {
            value = new byte[(int) size];
        } catch (OutOfMemoryError e) {
            throw new KvServerException(
                    ErrorCode.STORAGE_ERROR,
                    "UploadValue of "
                            + size
                            + " bytes: the kv-server's heap cannot hold the value (raise its"
                            + " -Xmx or lower large-values.memory-bytes)");
        }
        call.request(1);
    }

    private void chunk(UploadValueRequest request) {
        if (!request.getTable().equals(table) || request.hasHeader()) {
            throw KvServerException.invalid(
                    "UploadValue: a chunk of another table, or a second header");
        }
        ByteString chunk = request.getChunk();
        if (chunk.size() > value.length - filled) {
            throw KvServerException.invalid(
                    "UploadValue to table '"
                            + table
                            + "' shard "
                            + shard
                            + ": more bytes than the header's "
                            + value.length);
        }
        chunk.copyTo(value, filled);
        filled += chunk.size();
        call.request(1);
    }

    @Override
    public synchronized void onCompleted() {
        if (done) {
            return;
        }
        try {
            if (value == null || filled != value.length) {
                throw KvServerException.invalid(
                        "UploadValue to table '"
                                + table
                                + "' shard "
                                + shard
                                + ": the stream ended after "
                                + filled
                                + " of "
                                + (value == null ? "?" : value.length)
                                + " bytes");
            }
        } catch (RuntimeException e) {
            abandon();
            responder.fail(call, "UploadValue", e);
            return;
        }
        done = true;
        // The reservation now belongs to the staged value (released by its Write or expiry).
        long id = budget.stage(table, shard, value);
        value = null;
        reserved = 0;
        call.onNext(UploadValueResponse.newBuilder().setStagedValueId(id).build());
        call.onCompleted();
    }

    @Override
    public synchronized void onError(Throwable t) {
        abandon();
    }

    /** Ends the call's hold on the budget; nothing is staged. */
    synchronized void abandon() {
        done = true;
        value = null;
        if (reserved > 0) {
            budget.release(reserved);
            reserved = 0;
        }
    }
}
