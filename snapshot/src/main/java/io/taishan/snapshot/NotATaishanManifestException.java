package io.taishan.snapshot;

import java.io.IOException;

/**
 * A keyed state handle whose stream is not a Taishan manifest: a snapshot of another state backend
 * (HashMap, RocksDB), or a corrupt file.
 */
public class NotATaishanManifestException extends IOException {
    private static final long serialVersionUID = 1L;

    public NotATaishanManifestException(String message) {
        super(message);
    }
}
