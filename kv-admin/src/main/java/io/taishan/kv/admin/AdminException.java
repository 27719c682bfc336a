package io.taishan.kv.admin;

/** A command that cannot be done as asked (unknown table, snapshot or shard): exit code 1. */
final class AdminException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    AdminException(String message) {
        super(message);
    }
}
