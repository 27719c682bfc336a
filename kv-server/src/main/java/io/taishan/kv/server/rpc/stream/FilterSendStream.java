package io.taishan.kv.server.rpc.stream;

import com.google.protobuf.UnsafeByteOperations;
import io.grpc.stub.ServerCallStreamObserver;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.FetchFilterResponse;
import io.taishan.kv.proto.FilterHeader;
import io.taishan.kv.protocol.Wire;
import io.taishan.kv.server.rpc.ErrorStatus;
import io.taishan.kv.server.rpc.stream.PacedSender.ClientGone;
import io.taishan.kv.server.storage.FilterCopy;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.Shard;
import java.io.IOException;
import java.io.OutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One FetchFilter response stream, run on one of the node's filter-fetch threads (at most {@code
 * filter.max-concurrent-fetches} copies exist at once): the copy is taken under the lease check,
 * then sent as a header and chunks, a chunk only when the transport is ready for it, so a slow
 * client costs one chunk of buffer, not the filter.
 */
public final class FilterSendStream implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(FilterSendStream.class);

    private final ServerCallStreamObserver<FetchFilterResponse> call;
    private final Shard shard;
    private final long epoch;
    private final PacedSender<FetchFilterResponse> out;

    /** Made while the call is being started (see {@link PacedSender}). */
    public FilterSendStream(
            ServerCallStreamObserver<FetchFilterResponse> call, Shard shard, long epoch) {
        this.call = call;
        this.shard = shard;
        this.epoch = epoch;
        this.out = new PacedSender<>(call);
    }

    @Override
    public void run() {
        if (call.isCancelled()) {
            return;
        }
        FilterCopy copy;
        try {
            copy = shard.copyFilter(epoch);
        } catch (KvServerException e) {
            if (e.code() == ErrorCode.STORAGE_ERROR) {
                LOG.error("FetchFilter failed: {}", e.getMessage(), e);
            } else {
                LOG.debug("FetchFilter refused: {}", e.getMessage());
            }
            call.onError(ErrorStatus.of(e));
            return;
        } catch (RuntimeException e) {
            LOG.error("FetchFilter of {} failed unexpectedly", shard, e);
            call.onError(
                    ErrorStatus.of(
                            ErrorCode.STORAGE_ERROR, "FetchFilter of " + shard + " failed: " + e));
            return;
        }
        try (copy) {
            out.send(
                    FetchFilterResponse.newBuilder()
                            .setHeader(
                                    FilterHeader.newBuilder()
                                            .setVersion(copy.version())
                                            .setSerializedBytes(copy.serializedFilterBytes()))
                            .build());
            ChunkOutput chunks = new ChunkOutput(copy.serializedFilterBytes());
            copy.writeFilterTo(chunks);
            chunks.sendRest();
            call.onCompleted();
        } catch (ClientGone e) {
            LOG.debug("FetchFilter of {} cancelled by the client", shard);
        } catch (IOException | RuntimeException e) {
            LOG.error("FetchFilter of {} failed while sending", shard, e);
            call.onError(
                    ErrorStatus.of(
                            ErrorCode.STORAGE_ERROR,
                            "FetchFilter of " + shard + " failed while sending: " + e));
        }
    }

    /**
     * Cuts the filter's bytes into chunks; each buffer is sent as is, never reused, and none is
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
