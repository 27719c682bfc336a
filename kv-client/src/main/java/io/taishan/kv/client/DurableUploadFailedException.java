package io.taishan.kv.client;

import java.util.List;

/**
 * An {@link KvStore.Durable#uploadSnapshot} that failed after some nodes had finished: their copies
 * are in checkpoint storage, but no checkpoint will reference them. {@link #uploaded} names them so
 * the caller can delete what the call wrote (the copies not among the reusable paths it passed), as
 * Flink discards the files of a failed checkpoint's finished uploads. The nodes still uploading
 * when the call failed stop and delete their own; one that finished just as the failure cancelled
 * it leaves its copies behind unnamed.
 *
 * <p>Code, message and cause are the failure's.
 */
public final class DurableUploadFailedException extends KvException {
    private static final long serialVersionUID = 1L;

    private final transient List<DurableCut> uploaded;

    public DurableUploadFailedException(KvException failure, List<DurableCut> uploaded) {
        super(failure.code(), failure.getMessage(), null, failure);
        this.uploaded = List.copyOf(uploaded);
    }

    /** The cuts of the nodes that finished before the call failed. */
    public List<DurableCut> uploaded() {
        return uploaded;
    }
}
