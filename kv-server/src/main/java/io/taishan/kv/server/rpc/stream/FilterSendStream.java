package io.taishan.kv.server.rpc.stream;

import com.google.protobuf.UnsafeByteOperations;
import io.grpc.stub.ServerCallStreamObserver;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.FetchFilterResponse;
import io.taishan.kv.proto.FilterHeader;
import io.taishan.kv.proto.ShardRefusal;
import io.taishan.kv.protocol.Wire;
import io.taishan.kv.server.rpc.ErrorStatus;
import io.taishan.kv.server.rpc.stream.PacedSender.ClientGone;
import io.taishan.kv.server.storage.FilterCopy;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.Shard;
import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import java.util.function.IntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One FetchFilter or FetchFilters response stream, run on one of the node's filter-fetch threads
 * (at most {@code filter.max-concurrent-fetches} streams run at once, each holding one copy at a
 * time): each copy is taken under the lease check, then sent as a header and chunks, a chunk only
 * when the transport is ready for it, so a slow client costs one chunk of buffer, not the filter.
 *
 * <p>FetchFilter fails the call for any refusal; FetchFilters refuses that shard alone (a {@code
 * ShardRefusal}) and goes on, since the shards of one request are fenced, owned and rebuilt
 * independently.
 */
public final class FilterSendStream implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(FilterSendStream.class);

    private final ServerCallStreamObserver<FetchFilterResponse> call;
    private final IntFunction<Shard> shards;
    private final List<Target> targets;
    private final boolean many;
    private final PacedSender<FetchFilterResponse> out;

    /** A shard of the request and the epoch its lease claims. */
    public record Target(int shard, long epoch) {}

    /**
     * Made while the call is being started (see {@link PacedSender}).
     *
     * @param shards resolves a shard number to this node's shard, throwing {@link
     *     KvServerException} when it is not one (out of range, not owned)
     * @param many FetchFilters: refuse shards one by one; FetchFilter: one target, its refusal
     *     fails the call
     */
    public FilterSendStream(
            ServerCallStreamObserver<FetchFilterResponse> call,
            IntFunction<Shard> shards,
            List<Target> targets,
            boolean many) {
        if (!many && targets.size() != 1) {
            throw new IllegalArgumentException("FetchFilter sends one filter, not " + targets);
        }
        this.call = call;
        this.shards = shards;
        this.targets = List.copyOf(targets);
        this.many = many;
        this.out = new PacedSender<>(call);
    }

    @Override
    public void run() {
        String what = many ? "FetchFilters" : "FetchFilter";
        try {
            for (Target target : targets) {
                if (call.isCancelled()) {
                    return;
                }
                if (!send(target)) {
                    return;
                }
            }
            call.onCompleted();
        } catch (ClientGone e) {
            LOG.debug("{} cancelled by the client", what);
        } catch (IOException | RuntimeException e) {
            LOG.error("{} failed while sending", what, e);
            call.onError(
                    ErrorStatus.of(ErrorCode.STORAGE_ERROR, what + " failed while sending: " + e));
        }
    }

    /** Sends one filter, or its refusal; false when the call has ended. */
    private boolean send(Target target) throws IOException {
        FilterCopy copy;
        try {
            copy = shards.apply(target.shard()).copyFilter(target.epoch());
        } catch (KvServerException e) {
            if (e.code() == ErrorCode.STORAGE_ERROR) {
                LOG.error("Fetching the filter of shard {} failed: {}", target, e.getMessage(), e);
            } else {
                LOG.debug("Fetching the filter of shard {} refused: {}", target, e.getMessage());
            }
            return refuse(target, e.code(), e.getMessage());
        } catch (RuntimeException e) {
            LOG.error("Fetching the filter of shard {} failed unexpectedly", target, e);
            return refuse(
                    target,
                    ErrorCode.STORAGE_ERROR,
                    "fetching the filter of shard " + target.shard() + " failed: " + e);
        }
        try (copy) {
            out.send(
                    FetchFilterResponse.newBuilder()
                            .setHeader(
                                    FilterHeader.newBuilder()
                                            .setShard(target.shard())
                                            .setVersion(copy.version())
                                            .setSerializedBytes(copy.serializedFilterBytes()))
                            .build());
            ChunkOutput chunks = new ChunkOutput(copy.serializedFilterBytes());
            copy.writeFilterTo(chunks);
            chunks.sendRest();
        }
        return true;
    }

    private boolean refuse(Target target, ErrorCode code, String message) throws ClientGone {
        if (!many) {
            call.onError(ErrorStatus.of(code, message));
            return false;
        }
        out.send(
                FetchFilterResponse.newBuilder()
                        .setRefused(
                                ShardRefusal.newBuilder()
                                        .setShard(target.shard())
                                        .setCode(code)
                                        .setMessage(String.valueOf(message)))
                        .build());
        return true;
    }

    /**
     * Cuts one filter's bytes into chunks; each buffer is sent as is, never reused, and none is
     * larger than what is left to send: most filters are a few hundred bytes, and a restore of
     * 32,768 shards fetches as many (a 1 MiB buffer each was 32 GiB of garbage).
     */
    private final class ChunkOutput extends OutputStream {
        private long left;
        private byte[] buffer;
        private int filled;

        ChunkOutput(long bytes) {
            this.left = bytes;
            this.buffer = nextBuffer();
        }

        private byte[] nextBuffer() {
            return new byte[(int) Math.max(1, Math.min(Wire.CHUNK_BYTES, left))];
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int offset, int length) throws IOException {
            while (length > 0) {
                int n = Math.min(length, buffer.length - filled);
                System.arraycopy(b, offset, buffer, filled, n);
                filled += n;
                offset += n;
                length -= n;
                if (filled == buffer.length) {
                    sendRest();
                }
            }
        }

        void sendRest() throws ClientGone {
            if (filled == 0) {
                return;
            }
            byte[] full = buffer;
            int n = filled;
            left -= n;
            buffer = nextBuffer();
            filled = 0;
            out.send(
                    FetchFilterResponse.newBuilder()
                            .setChunk(UnsafeByteOperations.unsafeWrap(full, 0, n))
                            .build());
        }
    }
}
