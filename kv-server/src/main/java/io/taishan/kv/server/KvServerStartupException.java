package io.taishan.kv.server;

/** The server could not start; the message says why in one line (port taken, bad data dir, ...). */
public final class KvServerStartupException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public KvServerStartupException(String message, Throwable cause) {
        super(message, cause);
    }

    public KvServerStartupException(String message) {
        super(message);
    }
}
