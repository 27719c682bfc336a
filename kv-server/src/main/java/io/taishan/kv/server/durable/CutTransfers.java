package io.taishan.kv.server.durable;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's transfers of cut files to and from Flink's checkpoint storage: the entry point of this
 * package. {@link #start} sets up Flink's file systems from the node's {@code durable.*} keys; each
 * {@link #upload} and {@link #download} is a call of its own, whose files move in parallel on the
 * node's {@code durable.transfer-threads} threads (shared by every call, so the node's load on the
 * storage is bounded however many stores checkpoint at once), each file tried up to {@code
 * durable.max-attempts} times, the whole call within {@code durable.transfer-timeout}.
 *
 * <pre>{@code
 * CutTransfers transfers = CutTransfers.start(config.durable());
 * // A checkpoint: the cut's files, reusing the copies of the last confirmed checkpoint.
 * Map<FileIdentity, RemoteFile> reusable =
 *         FileOrigins.readFrom(previousCutDir)
 *                 .map(o -> o.reusable(confirmedPaths::contains))
 *                 .orElse(Map.of());
 * UploadResult up =
 *         transfers.upload(
 *                         new UploadRequest(storeId, cutDir, fileNames, sharedDir, chkDir, reusable))
 *                 .await();
 * up.origins().writeTo(cutDir); // what the store's next checkpoint may reuse
 * // up.dataFiles(), up.metadataPack(), up.uploadedBytes(): the handle's shared and private state
 *
 * // A restore on a node without the cut: into a new directory, verified, all or nothing.
 * DownloadResult down = transfers.download(up.downloadInto(newCutDir)).await();
 * FileOrigins.of(forkStoreId, up.dataFiles()).writeTo(newCutDir);
 * }</pre>
 */
public final class CutTransfers implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CutTransfers.class);

    private final DurableOptions options;
    private final Transfer.Attempts attempts;
    private final ThreadPoolExecutor pool;
    private final ScheduledThreadPoolExecutor timer;
    private final TransferStats stats = new TransferStats();
    private final Set<Transfer<?>> running = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    private CutTransfers(DurableOptions options) {
        this.options = options;
        this.attempts = new Transfer.Attempts(options.maxAttempts(), options.retryBackoff());
        this.pool =
                new ThreadPoolExecutor(
                        options.transferThreads(),
                        options.transferThreads(),
                        0,
                        TimeUnit.MILLISECONDS,
                        new LinkedBlockingQueue<>(),
                        daemonThreads("taishan-durable-transfer-"));
        this.timer = new ScheduledThreadPoolExecutor(1, daemonThreads("taishan-durable-timer-"));
        timer.setRemoveOnCancelPolicy(true);
    }

    /**
     * Initializes Flink's file systems for this JVM from {@code options} and starts the transfer
     * threads.
     *
     * @throws IllegalArgumentException with one line naming the key, for a configuration or plugins
     *     directory that cannot be read, or a bad setting
     */
    public static CutTransfers start(DurableOptions options) {
        options.validate();
        FlinkFileSystems.initialize(options);
        LOG.info("Durable cut transfers on: {}", options);
        return new CutTransfers(options);
    }

    /**
     * Uploads a cut's files ({@link UploadRequest} says which go where). The result lists every
     * data file with its copy and the metadata pack; on failure nothing is reported and every
     * object the call wrote is deleted.
     */
    public Transfer<UploadResult> upload(UploadRequest request) {
        if (closed) {
            return Transfer.failed(
                    shutDown(request.sharedDir()), stats, TransferStats.Direction.UPLOAD);
        }
        return run(CutUpload.create(request, attempts, stats));
    }

    /**
     * Downloads a cut's files into a new directory, verified, which appears only once whole; on
     * failure nothing is left.
     */
    public Transfer<DownloadResult> download(DownloadRequest request) {
        if (closed) {
            return Transfer.failed(
                    shutDown(request.targetDir().toString()),
                    stats,
                    TransferStats.Direction.DOWNLOAD);
        }
        return run(CutDownload.create(request, attempts, stats));
    }

    /**
     * Deletes the objects a successful upload wrote (its uploaded files and its pack, never a
     * reused copy), for a caller whose call failed as a whole after this upload succeeded, so that
     * nothing of it was reported and nothing can reference them. Blocks; a delete that fails is
     * logged (the object then stays, referenced by no checkpoint).
     */
    public void discard(UploadResult result) {
        List<String> written = new ArrayList<>();
        result.uploaded().forEach(file -> written.add(file.remote().path()));
        if (result.metadataPack() != null) {
            written.add(result.metadataPack().path());
        }
        for (String path : written) {
            try {
                org.apache.flink.core.fs.Path object = new org.apache.flink.core.fs.Path(path);
                object.getFileSystem().delete(object, false);
            } catch (IOException | RuntimeException e) {
                LOG.warn(
                        "Could not delete {}, written by an upload whose call failed (it stays,"
                                + " referenced by no checkpoint): {}",
                        path,
                        e.toString());
            }
        }
    }

    /** Whether a directory is the staging directory of a download its process did not finish. */
    public static boolean isDownloadLeftover(Path dir) {
        return CutDownload.isStagingDir(dir);
    }

    /** The node's counters, for its metrics. */
    public TransferStats stats() {
        return stats;
    }

    public DurableOptions options() {
        return options;
    }

    /**
     * Cancels the calls under way, waits for them to clean up (at most 30 s), stops the threads.
     */
    @Override
    public void close() {
        closed = true;
        running.forEach(Transfer::cancel);
        pool.shutdown();
        try {
            if (!pool.awaitTermination(30, TimeUnit.SECONDS)) {
                LOG.warn("Durable transfers still running 30 s after their cancel; interrupting");
                pool.shutdownNow();
            }
        } catch (InterruptedException e) {
            pool.shutdownNow();
            Thread.currentThread().interrupt();
        }
        timer.shutdownNow();
    }

    private <R> Transfer<R> run(Transfer<R> transfer) {
        running.add(transfer);
        transfer.settled().whenComplete((ignored, e) -> running.remove(transfer));
        transfer.start(pool, timer, options.transferTimeout());
        return transfer;
    }

    private static TransferFailedException shutDown(String path) {
        return TransferFailedException.cancelled(path, "durable transfers are shut down");
    }

    private static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }
}
