package io.taishan.kv.server.service;

import com.google.protobuf.ByteString;
import io.taishan.kv.client.KvLimits;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.Limits;
import io.taishan.kv.server.storage.KvServerException;

/** The configured request limits, and the checks that fail with LIMIT_EXCEEDED. */
final class RequestLimits {
    private final KvLimits limits;

    RequestLimits(KvLimits limits) {
        this.limits = limits;
    }

    KvLimits limits() {
        return limits;
    }

    Limits toProto() {
        return Limits.newBuilder()
                .setMaxKeyBytes(limits.maxKeyBytes())
                .setMaxValueBytes(limits.maxValueBytes())
                .setMaxRequestBytes(limits.maxRequestBytes())
                .setMaxOpsPerRequest(limits.maxOpsPerRequest())
                .setMaxScanPageEntries(limits.maxScanPageEntries())
                .setMaxScanPageBytes(limits.maxScanPageBytes())
                .build();
    }

    void checkKey(ByteString key, String where) {
        if (key.size() > limits.maxKeyBytes()) {
            throw exceeded(
                    "key of "
                            + key.size()
                            + " bytes in "
                            + where
                            + " exceeds the limit of "
                            + limits.maxKeyBytes()
                            + " bytes");
        }
    }

    void checkValue(ByteString value, String where) {
        if (value.size() > limits.maxValueBytes()) {
            throw exceeded(
                    "value of "
                            + value.size()
                            + " bytes in "
                            + where
                            + " exceeds the limit of "
                            + limits.maxValueBytes()
                            + " bytes");
        }
    }

    void checkRequestSize(int serializedBytes, String where) {
        if (serializedBytes > limits.maxRequestBytes()) {
            throw exceeded(
                    where
                            + " request of "
                            + serializedBytes
                            + " bytes exceeds the limit of "
                            + limits.maxRequestBytes()
                            + " bytes");
        }
    }

    void checkOpCount(long ops, String where) {
        if (ops > limits.maxOpsPerRequest()) {
            throw exceeded(
                    where
                            + " request with "
                            + ops
                            + " ops exceeds the limit of "
                            + limits.maxOpsPerRequest()
                            + " ops");
        }
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
