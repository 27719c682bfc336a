package io.taishan.kv.server.durable;

import java.util.concurrent.atomic.LongAdder;

/**
 * The node's transfer counters since it started, for its metrics ({@code
 * io.taishan.kv.server.metrics} reads them when Prometheus scrapes). A file counts once its
 * transfer completed; a file of a call that failed later still counts, as its bytes did move.
 */
public final class TransferStats {
    /** Which way a call moves files. */
    enum Direction {
        UPLOAD,
        DOWNLOAD
    }

    private final LongAdder uploadedFiles = new LongAdder();
    private final LongAdder uploadedBytes = new LongAdder();
    private final LongAdder reusedFiles = new LongAdder();
    private final LongAdder reusedBytes = new LongAdder();
    private final LongAdder downloadedFiles = new LongAdder();
    private final LongAdder downloadedBytes = new LongAdder();
    private final LongAdder failedUploads = new LongAdder();
    private final LongAdder failedDownloads = new LongAdder();
    private final LongAdder retries = new LongAdder();

    void uploaded(long bytes) {
        uploadedFiles.increment();
        uploadedBytes.add(bytes);
    }

    void reused(long bytes) {
        reusedFiles.increment();
        reusedBytes.add(bytes);
    }

    void downloaded(long bytes) {
        downloadedFiles.increment();
        downloadedBytes.add(bytes);
    }

    void failed(Direction direction) {
        (direction == Direction.UPLOAD ? failedUploads : failedDownloads).increment();
    }

    void retried() {
        retries.increment();
    }

    /** Objects written to checkpoint storage (data files and metadata packs). */
    public long uploadedFiles() {
        return uploadedFiles.sum();
    }

    public long uploadedBytes() {
        return uploadedBytes.sum();
    }

    /** Data files an upload referenced instead of uploading them again. */
    public long reusedFiles() {
        return reusedFiles.sum();
    }

    public long reusedBytes() {
        return reusedBytes.sum();
    }

    /** Objects read from checkpoint storage and verified (data files and metadata packs). */
    public long downloadedFiles() {
        return downloadedFiles.sum();
    }

    public long downloadedBytes() {
        return downloadedBytes.sum();
    }

    /** Upload calls that failed (timed out and cancelled ones included). */
    public long failedUploads() {
        return failedUploads.sum();
    }

    /** Download calls that failed (timed out and cancelled ones included). */
    public long failedDownloads() {
        return failedDownloads.sum();
    }

    /** Attempts at a file that failed and were made again. */
    public long retries() {
        return retries.sum();
    }
}
