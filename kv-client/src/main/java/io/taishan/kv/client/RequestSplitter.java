package io.taishan.kv.client;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import io.taishan.kv.proto.KeyRef;
import io.taishan.kv.proto.MultiGetRequest;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.WriteOp;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.protocol.KvLimits;
import java.util.ArrayList;
import java.util.List;

/**
 * Cuts what one node must receive into requests within the server's limits (serialized bytes and
 * ops per request), and checks single keys and values against theirs, before anything is sent.
 */
final class RequestSplitter {
    private static final int HEX_PREVIEW_BYTES = 16;

    private final KvLimits limits;

    RequestSplitter(KvLimits limits) {
        this.limits = limits;
    }

    /**
     * Packs the shard writes (all for one node) greedily into requests, keeping each shard's ops in
     * one request so that it stays atomic; fails if one shard alone is over a limit.
     */
    List<WriteRequest> splitWrites(String table, List<ShardWrite> shardWrites) {
        int baseBytes = CodedOutputStream.computeStringSize(WriteRequest.TABLE_FIELD_NUMBER, table);
        List<WriteRequest> requests = new ArrayList<>();
        WriteRequest.Builder current = WriteRequest.newBuilder().setTable(table);
        long currentBytes = baseBytes;
        long currentOps = 0;
        for (ShardWrite shardWrite : shardWrites) {
            int bytes =
                    CodedOutputStream.computeMessageSize(
                            WriteRequest.SHARDS_FIELD_NUMBER, shardWrite);
            int ops = shardWrite.getOpsCount();
            if (baseBytes + bytes > limits.maxRequestBytes() || ops > limits.maxOpsPerRequest()) {
                throw new LimitExceededException(
                        "the writes to shard "
                                + shardWrite.getShard()
                                + " of table '"
                                + table
                                + "' ("
                                + ops
                                + " ops, "
                                + (baseBytes + bytes)
                                + " bytes) do not fit in one request (limits: "
                                + limits.maxOpsPerRequest()
                                + " ops, "
                                + limits.maxRequestBytes()
                                + " bytes); a shard's ops are never split, so flush it in"
                                + " smaller batches",
                        null,
                        null);
            }
            if (currentOps > 0
                    && (currentBytes + bytes > limits.maxRequestBytes()
                            || currentOps + ops > limits.maxOpsPerRequest())) {
                requests.add(current.build());
                current = WriteRequest.newBuilder().setTable(table);
                currentBytes = baseBytes;
                currentOps = 0;
            }
            current.addShards(shardWrite);
            currentBytes += bytes;
            currentOps += ops;
        }
        if (current.getShardsCount() > 0) {
            requests.add(current.build());
        }
        return requests;
    }

    /** Splits the keys (of one shard) into requests, in order. */
    List<MultiGetRequest> splitMultiGet(String table, List<KeyRef> keys) {
        int baseBytes =
                CodedOutputStream.computeStringSize(MultiGetRequest.TABLE_FIELD_NUMBER, table);
        List<MultiGetRequest> requests = new ArrayList<>();
        MultiGetRequest.Builder current = MultiGetRequest.newBuilder().setTable(table);
        long currentBytes = baseBytes;
        for (KeyRef key : keys) {
            int bytes =
                    CodedOutputStream.computeMessageSize(MultiGetRequest.KEYS_FIELD_NUMBER, key);
            int count = current.getKeysCount();
            if (count > 0
                    && (currentBytes + bytes > limits.maxRequestBytes()
                            || count + 1 > limits.maxOpsPerRequest())) {
                requests.add(current.build());
                current = MultiGetRequest.newBuilder().setTable(table);
                currentBytes = baseBytes;
            }
            current.addKeys(key);
            currentBytes += bytes;
        }
        if (current.getKeysCount() > 0) {
            requests.add(current.build());
        }
        return requests;
    }

    void checkKey(ByteString key, String what, int shard) {
        if (key.size() > limits.maxKeyBytes()) {
            throw new LimitExceededException(
                    "key of "
                            + key.size()
                            + " bytes ("
                            + what
                            + ", shard "
                            + shard
                            + ", key "
                            + hexPreview(key)
                            + ") exceeds the server's limit of "
                            + limits.maxKeyBytes()
                            + " bytes",
                    null,
                    null);
        }
    }

    void checkValue(ByteString key, ByteString value, String what, int shard) {
        if (value.size() > limits.maxValueBytes()) {
            throw new LimitExceededException(
                    "value of "
                            + value.size()
                            + " bytes ("
                            + what
                            + ", shard "
                            + shard
                            + ", key "
                            + hexPreview(key)
                            + ") exceeds the server's limit of "
                            + limits.maxValueBytes()
                            + " bytes (limits.max-value-bytes)",
                    null,
                    null);
        }
    }

    /** Checks every key and value of the shard writes against the limits. */
    void checkOps(List<ShardWrite> shardWrites) {
        for (ShardWrite shardWrite : shardWrites) {
            int shard = shardWrite.getShard();
            for (WriteOp op : shardWrite.getOpsList()) {
                switch (op.getOpCase()) {
                    case PUT:
                        checkKey(op.getPut().getKey(), "put", shard);
                        checkValue(op.getPut().getKey(), op.getPut().getValue(), "put", shard);
                        break;
                    case APPEND:
                        checkKey(op.getAppend().getKey(), "append", shard);
                        checkValue(
                                op.getAppend().getKey(),
                                op.getAppend().getValue(),
                                "append",
                                shard);
                        break;
                    case DELETE:
                        checkKey(op.getDelete().getKey(), "delete", shard);
                        break;
                    case DELETE_RANGE:
                        checkKey(op.getDeleteRange().getBeginKey(), "delete-range begin", shard);
                        checkKey(op.getDeleteRange().getEndKey(), "delete-range end", shard);
                        break;
                    default:
                        break;
                }
            }
        }
    }

    static String hexPreview(ByteString bytes) {
        int shown = Math.min(bytes.size(), HEX_PREVIEW_BYTES);
        StringBuilder sb = new StringBuilder(2 + shown * 2 + 3).append("0x");
        for (int i = 0; i < shown; i++) {
            int b = bytes.byteAt(i);
            sb.append(Character.forDigit((b >> 4) & 0xF, 16))
                    .append(Character.forDigit(b & 0xF, 16));
        }
        return bytes.size() > shown ? sb.append("...").toString() : sb.toString();
    }
}
