package io.taishan.kv.server.rpc.stream;

import com.google.protobuf.UnsafeByteOperations;
import io.grpc.stub.ServerCallStreamObserver;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.ReadValueResponse;
import io.taishan.kv.proto.ValueHeader;
import io.taishan.kv.protocol.Wire;
import io.taishan.kv.server.rpc.ErrorStatus;
import io.taishan.kv.server.rpc.RequestLimits;
import io.taishan.kv.server.rpc.Responder;
import io.taishan.kv.server.rpc.stream.PacedSender.ClientGone;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.Shard;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One ReadValue response stream, run on a large-value thread: the value's size is read without the
 * value (so a waiting read holds nothing), then its bytes are reserved in the budget, the value is
 * read whole (RocksDB's Java API reads no part of a value) and sent in chunks, each when the
 * transport is ready for it.
 */
public final class ValueReadStream implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(ValueReadStream.class);

    private final ServerCallStreamObserver<ReadValueResponse> call;
    private final Shard shard;
    private final long epoch;
    private final byte[] key;
    private final LargeValueBudget budget;
    private final RequestLimits limits;
    private final Responder responder;
    private final PacedSender<ReadValueResponse> out;

    /** Made while the call is being started (see {@link PacedSender}). */
    public ValueReadStream(
            ServerCallStreamObserver<ReadValueResponse> call,
            Shard shard,
            long epoch,
            byte[] key,
            LargeValueBudget budget,
            RequestLimits limits,
            Responder responder) {
        this.call = call;
        this.shard = shard;
        this.epoch = epoch;
        this.key = key;
        this.budget = budget;
        this.limits = limits;
        this.responder = responder;
        this.out = new PacedSender<>(call);
    }

    @Override
    public void run() {
        long reserved = 0;
        try {
            if (call.isCancelled()) {
                return;
            }
            long size = shard.valueSize(epoch, key);
            if (size > 0) {
                checkReadable(size);
                if (!budget.reserve(size, call::isCancelled)) {
                    return;
                }
                reserved = size;
            }
            byte[] value = size < 0 ? null : shard.get(epoch, key);
            if (value != null && value.length > reserved) {
                // It grew since its size was read.
                checkReadable(value.length);
                long more = value.length - reserved;
                if (!budget.reserve(more, call::isCancelled)) {
                    return;
                }
                reserved += more;
            }
            out.send(
                    ReadValueResponse.newBuilder()
                            .setHeader(
                                    ValueHeader.newBuilder()
                                            .setFound(value != null)
                                            .setValueBytes(value == null ? 0 : value.length))
                            .build());
            if (value != null) {
                for (int at = 0; at < value.length; at += Wire.CHUNK_BYTES) {
                    int n = Math.min(Wire.CHUNK_BYTES, value.length - at);
                    // Wrapped: this array was read for this call and is never written.
                    out.send(
                            ReadValueResponse.newBuilder()
                                    .setChunk(UnsafeByteOperations.unsafeWrap(value, at, n))
                                    .build());
                }
            }
            call.onCompleted();
        } catch (ClientGone e) {
            LOG.debug("ReadValue of {} cancelled by the client", shard);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            call.onError(ErrorStatus.of(KvServerException.shuttingDown()));
        } catch (OutOfMemoryError e) {
            call.onError(
                    ErrorStatus.of(
                            ErrorCode.STORAGE_ERROR,
                            "ReadValue of "
                                    + shard
                                    + ": the kv-server's heap cannot hold the value (raise"
                                    + " its -Xmx or lower large-values.memory-bytes)"));
        } catch (RuntimeException e) {
            responder.fail(call, "ReadValue", e);
        } finally {
            if (reserved > 0) {
                budget.release(reserved);
            }
        }
    }

    private void checkReadable(long size) {
        if (!limits.largeValueFits(size)) {
            throw limits.largeValueTooLarge(
                    size,
                    "ReadValue of "
                            + shard
                            + " (a list appended past the limit: every operand fit, their"
                            + " join does not)");
        }
    }
}
