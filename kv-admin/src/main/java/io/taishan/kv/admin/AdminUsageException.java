package io.taishan.kv.admin;

/** A command line that does not parse: exit code 2 with the usage text. */
final class AdminUsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    AdminUsageException(String message) {
        super(message);
    }
}
