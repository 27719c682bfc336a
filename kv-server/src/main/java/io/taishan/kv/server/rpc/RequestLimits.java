package io.taishan.kv.server.rpc;

import com.google.protobuf.ByteString;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.protocol.KvLimits;
import io.taishan.kv.server.storage.KvServerException;

/** The configured request limits, and the checks that fail with LIMIT_EXCEEDED. */
public final class RequestLimits {
    private final KvLimits limits;

    RequestLimits(KvLimits limits) {
        this.limits = limits;
    }

    KvLimits limits() {
        return limits;
    }

    void checkKey(ByteString key, String where) {
        if (!keyFits(key)) {
            throw keyTooLarge(key, where);
        }
    }

    void checkValue(ByteString value, String where) {
        if (!valueFits(value)) {
            throw valueTooLarge(value, where);
        }
    }

    void checkRequestSize(int serializedBytes, String where) {
        if (!requestFits(serializedBytes)) {
            throw requestTooLarge(serializedBytes, where);
        }
    }

    void checkOpCount(long ops, String where) {
        if (!opCountFits(ops)) {
            throw tooManyOps(ops, where);
        }
    }

    // The checks in two halves, for the data path: the test, and the error with its message, which
    // is built only when the test fails.

    boolean keyFits(ByteString key) {
        return key.size() <= limits.maxKeyBytes();
    }

    KvServerException keyTooLarge(ByteString key, String where) {
        return exceeded(
                "key of "
                        + key.size()
                        + " bytes in "
                        + where
                        + " exceeds the limit of "
                        + limits.maxKeyBytes()
                        + " bytes");
    }

    /** Whether a value may travel inside its message. */
    boolean valueFits(ByteString value) {
        return value.size() <= limits.maxInlineValueBytes();
    }

    KvServerException valueTooLarge(ByteString value, String where) {
        if (value.size() > limits.maxValueBytes()) {
            return largeValueTooLarge(value.size(), where);
        }
        return exceeded(
                "value of "
                        + value.size()
                        + " bytes in "
                        + where
                        + " exceeds the inline limit of "
                        + limits.maxInlineValueBytes()
                        + " bytes (limits.max-inline-value-bytes): larger values go by"
                        + " UploadValue, which this client did not use");
    }

    int maxInlineValueBytes() {
        return limits.maxInlineValueBytes();
    }

    /** Whether a value (of any transfer) is within the largest a value may be. */
    public boolean largeValueFits(long valueBytes) {
        return valueBytes <= limits.maxValueBytes();
    }

    public KvServerException largeValueTooLarge(long valueBytes, String where) {
        return exceeded(
                "value of "
                        + valueBytes
                        + " bytes in "
                        + where
                        + " exceeds the limit of "
                        + limits.maxValueBytes()
                        + " bytes (limits.max-value-bytes)");
    }

    long maxRequestBytes() {
        return limits.maxRequestBytes();
    }

    boolean requestFits(int serializedBytes) {
        return serializedBytes <= limits.maxRequestBytes();
    }

    KvServerException requestTooLarge(int serializedBytes, String where) {
        return exceeded(
                where
                        + " request of "
                        + serializedBytes
                        + " bytes exceeds the limit of "
                        + limits.maxRequestBytes()
                        + " bytes");
    }

    boolean opCountFits(long ops) {
        return ops <= limits.maxOpsPerRequest();
    }

    KvServerException tooManyOps(long ops, String where) {
        return exceeded(
                where
                        + " request with "
                        + ops
                        + " ops exceeds the limit of "
                        + limits.maxOpsPerRequest()
                        + " ops");
    }

    int scanPageEntries(int requested) {
        if (requested <= 0 || requested > limits.maxScanPageEntries()) {
            return limits.maxScanPageEntries();
        }
        return requested;
    }

    int scanPageBytes() {
        return limits.maxScanPageBytes();
    }

    private static KvServerException exceeded(String message) {
        return new KvServerException(ErrorCode.LIMIT_EXCEEDED, message);
    }
}
