package io.taishan.kv.server.storage;

import io.taishan.kv.proto.ErrorCode;

/**
 * A request the server refuses or could not carry out. The service turns it into a gRPC status with
 * the {@link ErrorCode} in the {@code taishan-error-code} trailer, so the message must name what
 * failed (table, shard, snapshot, epoch). Not final: the gRPC layer's refusal of a shard another
 * node owns carries its view of the cluster beside the code.
 */
public class KvServerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;

    public KvServerException(ErrorCode code, String message) {
        super(message);
        this.code = code;
    }

    public KvServerException(ErrorCode code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    public ErrorCode code() {
        return code;
    }

    public static KvServerException tableNotFound(String table) {
        return new KvServerException(ErrorCode.TABLE_NOT_FOUND, "table '" + table + "' not found");
    }

    public static KvServerException snapshotNotFound(String table, int shard, long snapshotId) {
        return new KvServerException(
                ErrorCode.SNAPSHOT_NOT_FOUND,
                "snapshot "
                        + snapshotId
                        + " of table '"
                        + table
                        + "' shard "
                        + shard
                        + " not found");
    }

    /** For a restore naming snapshots that are gone; at most ten are named. */
    public static KvServerException snapshotsNotFound(java.util.List<String> missing) {
        if (missing.size() == 1) {
            return new KvServerException(
                    ErrorCode.SNAPSHOT_NOT_FOUND, missing.get(0) + " not found");
        }
        int shown = Math.min(10, missing.size());
        return new KvServerException(
                ErrorCode.SNAPSHOT_NOT_FOUND,
                missing.size()
                        + " snapshots not found: "
                        + String.join(", ", missing.subList(0, shown))
                        + (shown < missing.size() ? ", ..." : ""));
    }

    public static KvServerException invalid(String message) {
        return new KvServerException(ErrorCode.INVALID_ARGUMENT, message);
    }

    public static KvServerException shuttingDown() {
        return new KvServerException(ErrorCode.SHUTTING_DOWN, "the kv-server is shutting down");
    }

    public static KvServerException storage(String what, Throwable cause) {
        String detail = cause.getMessage() == null ? cause.toString() : cause.getMessage();
        return new KvServerException(ErrorCode.STORAGE_ERROR, what + ": " + detail, cause);
    }
}
