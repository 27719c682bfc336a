package io.taishan.kv.server.storage;

/** The data directory cannot be used; the message says why in one line. */
public final class StorageStartupException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public StorageStartupException(String message) {
        super(message);
    }

    public StorageStartupException(String message, Throwable cause) {
        super(message, cause);
    }
}
