package io.taishan.bloom;

import java.io.IOException;

/**
 * Serialized filter bytes that cannot be loaded: not a Taishan filter, a format version this build
 * does not read, a checksum mismatch, or a truncated input. Never a partial load: the reader frees
 * whatever it allocated before throwing.
 */
public final class FilterFormatException extends IOException {

    private static final long serialVersionUID = 1L;

    public FilterFormatException(String message) {
        super(message);
    }

    public FilterFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
