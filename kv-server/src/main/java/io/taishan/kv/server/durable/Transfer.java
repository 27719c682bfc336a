package io.taishan.kv.server.durable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One upload or download call under way: its files moving in parallel on the node's transfer
 * threads, and the handle its caller waits on, cancels or watches.
 *
 * <p>The rule: the call succeeds only when every file did, and then {@link #result()} completes
 * with the result; the first file that fails for good (after its attempts), the deadline, or {@link
 * #cancel()} fails the call at once: {@link #result()} completes exceptionally with a {@link
 * TransferFailedException}, the files still moving are interrupted and those not started never
 * start. What a failed call leaves behind is cleaned up once its last file has stopped (an upload
 * deletes the objects it wrote, a download its staging directory); {@link #settled()} tells when. A
 * cancel that comes once every file is there and the call is finishing (the download's rename into
 * place) is too late and changes nothing.
 *
 * <p>Concurrency: one lock guards the state, the threads working for the call and the count of
 * files that ended; a thread is interrupted only while it is registered as working for this call,
 * so an interrupt never reaches the next call's file on the same pool thread.
 */
public final class Transfer<R> {
    private static final Logger LOG = LoggerFactory.getLogger(Transfer.class);

    /** How often a call still running logs its progress. */
    static final Duration PROGRESS_LOG_INTERVAL = Duration.ofSeconds(10);

    /** One file's work within a call, run on a transfer thread. */
    interface FileTask {
        void run(Transfer<?> transfer) throws TransferFailedException, InterruptedException;
    }

    /** What makes the result once every file is there (may still fail the call). */
    interface Finish<R> {
        R finish() throws TransferFailedException;
    }

    /** How often and how patiently a file is tried. */
    record Attempts(int max, Duration firstBackoff) {}

    private enum State {
        RUNNING,
        FINISHING,
        SUCCEEDED,
        FAILED
    }

    private final String description;
    private final String path;
    private final List<FileTask> tasks;
    private final Finish<R> finish;
    private final Runnable cleanup;
    private final Attempts attempts;
    private final TransferStats stats;
    private final TransferStats.Direction direction;
    private final long totalBytes;
    private final LongAdder bytesDone = new LongAdder();
    private final LongAdder filesDone = new LongAdder();
    private final CompletableFuture<R> result = new CompletableFuture<>();
    private final CompletableFuture<Void> settled = new CompletableFuture<>();
    private final Object lock = new Object();

    @GuardedBy("lock")
    private State state = State.RUNNING;

    @GuardedBy("lock")
    private final Set<Thread> working = new HashSet<>();

    @GuardedBy("lock")
    private int ended;

    @GuardedBy("lock")
    private final List<ScheduledFuture<?>> timers = new ArrayList<>();

    private long startNanos;

    /**
     * @param description what the call does, for logs and messages ("upload of 12 files of store 7
     *     to s3://…")
     * @param path the directory the call concerns, for failures of the whole call
     * @param cleanup undoes a failed call once no file moves any more; must not throw
     */
    Transfer(
            String description,
            String path,
            List<FileTask> tasks,
            long totalBytes,
            Finish<R> finish,
            Runnable cleanup,
            Attempts attempts,
            TransferStats stats,
            TransferStats.Direction direction) {
        this.description = description;
        this.path = path;
        this.tasks = List.copyOf(tasks);
        this.totalBytes = totalBytes;
        this.finish = finish;
        this.cleanup = cleanup;
        this.attempts = attempts;
        this.stats = stats;
        this.direction = direction;
    }

    /** A call that failed before anything moved. */
    static <R> Transfer<R> failed(
            TransferFailedException failure,
            TransferStats stats,
            TransferStats.Direction direction) {
        Transfer<R> t =
                new Transfer<>(
                        failure.getMessage(),
                        failure.path(),
                        List.of(),
                        0,
                        () -> {
                            throw failure;
                        },
                        () -> {},
                        new Attempts(1, Duration.ZERO),
                        stats,
                        direction);
        t.startNanos = System.nanoTime();
        t.settle();
        return t;
    }

    void start(Executor pool, ScheduledExecutorService timer, Duration timeout) {
        if (settled.isDone()) {
            return; // failed before it started
        }
        startNanos = System.nanoTime();
        if (tasks.isEmpty()) {
            settle();
            return;
        }
        try {
            synchronized (lock) {
                timers.add(
                        timer.schedule(
                                () ->
                                        fail(
                                                TransferFailedException.timedOut(
                                                        path,
                                                        description
                                                                + " timed out after "
                                                                + format(timeout)
                                                                + " (durable.transfer-timeout), "
                                                                + progress())),
                                timeout.toNanos(),
                                TimeUnit.NANOSECONDS));
                long every = PROGRESS_LOG_INTERVAL.toNanos();
                timers.add(
                        timer.scheduleAtFixedRate(
                                this::logProgress, every, every, TimeUnit.NANOSECONDS));
            }
        } catch (RejectedExecutionException e) {
            // The node shuts down: the files below end without starting.
            fail(TransferFailedException.cancelled(path, "durable transfers are shut down"));
        }
        for (FileTask task : tasks) {
            try {
                pool.execute(() -> runTask(task));
            } catch (RejectedExecutionException e) {
                // The node shuts down: the call fails, and this file ends without starting.
                fail(TransferFailedException.cancelled(path, "durable transfers are shut down"));
                runTask(task);
            }
        }
    }

    // ---- the caller's handle

    /**
     * Completes with the result once every file is there, or exceptionally with a {@link
     * TransferFailedException} as soon as the call failed. A copy: completing it does nothing to
     * the call ({@link #cancel()} does).
     */
    public CompletableFuture<R> result() {
        return result.copy();
    }

    /** Waits for the result; an interrupt of the waiting thread cancels the call. */
    public R await() throws TransferFailedException, InterruptedException {
        try {
            return result.get();
        } catch (ExecutionException e) {
            throw (TransferFailedException) e.getCause();
        } catch (InterruptedException e) {
            cancel();
            throw e;
        }
    }

    /** Fails the call (reason {@code CANCELLED}) unless it is already finishing or done. */
    public void cancel() {
        fail(TransferFailedException.cancelled(path, description + " cancelled, " + progress()));
    }

    /**
     * Completes once no file of the call moves any more and, after a failure, what it wrote is
     * deleted: after this, a failed upload has left nothing in storage.
     */
    public CompletableFuture<Void> settled() {
        return settled.copy();
    }

    /** Bytes moved so far, of files complete or under way (a retried file's start again). */
    public long bytesDone() {
        return bytesDone.sum();
    }

    public long totalBytes() {
        return totalBytes;
    }

    public long filesDone() {
        return filesDone.sum();
    }

    public int totalFiles() {
        return tasks.size();
    }

    @Override
    public String toString() {
        return description + ", " + progress();
    }

    // ---- for the file tasks

    /** Throws once the call failed or was cancelled; checked between buffers. */
    void checkRunning() throws TransferFailedException {
        synchronized (lock) {
            if (state == State.RUNNING) {
                return;
            }
        }
        throw TransferFailedException.cancelled(path, description + " stopped");
    }

    void moved(long bytes) {
        bytesDone.add(bytes);
    }

    void fileDone() {
        filesDone.increment();
    }

    /** One attempt at a file, which may be made again. */
    interface Attempt<T> {
        T run() throws TransferFailedException;
    }

    /**
     * Runs {@code attempt} until it succeeds, fails for good, or the call stops; waits {@code
     * firstBackoff}, then twice as long each time, between attempts.
     */
    <T> T withRetries(String what, Attempt<T> attempt)
            throws TransferFailedException, InterruptedException {
        long backoffMillis = attempts.firstBackoff().toMillis();
        for (int n = 1; ; n++) {
            checkRunning();
            try {
                return attempt.run();
            } catch (TransferFailedException e) {
                if (!e.retryable() || n >= attempts.max()) {
                    throw e.afterAttempts(n);
                }
                checkRunning();
                stats.retried();
                LOG.warn(
                        "{} failed (attempt {} of {}), again in {} ms: {}",
                        what,
                        n,
                        attempts.max(),
                        backoffMillis,
                        e.getMessage());
            }
            Thread.sleep(backoffMillis);
            backoffMillis = Math.min(backoffMillis * 2, Duration.ofMinutes(1).toMillis());
        }
    }

    // ---- coordination

    private void runTask(FileTask task) {
        Thread self = Thread.currentThread();
        boolean run;
        synchronized (lock) {
            run = state == State.RUNNING;
            if (run) {
                working.add(self);
            }
        }
        try {
            if (run) {
                task.run(this);
            }
        } catch (TransferFailedException e) {
            fail(e);
        } catch (InterruptedException e) {
            fail(TransferFailedException.cancelled(path, description + " interrupted"));
        } catch (RuntimeException | Error e) {
            fail(
                    new TransferFailedException(
                            TransferFailedException.Reason.STORAGE,
                            path,
                            description + " failed: " + e,
                            e,
                            false));
        } finally {
            boolean last;
            synchronized (lock) {
                working.remove(self);
                last = ++ended == tasks.size();
            }
            // An interrupt meant for this call must not reach the pool's next task.
            Thread.interrupted();
            if (last) {
                settle();
            }
        }
    }

    /** The first failure fails the call; later ones (the interrupted files') are dropped. */
    private void fail(TransferFailedException failure) {
        synchronized (lock) {
            if (state != State.RUNNING) {
                return;
            }
            state = State.FAILED;
            for (Thread t : working) {
                t.interrupt();
            }
        }
        LOG.warn("{} failed after {} ms: {}", description, elapsedMillis(), failure.getMessage());
        stats.failed(direction);
        result.completeExceptionally(failure);
    }

    /** Runs once, when the last file ended (or at once when there were none). */
    private void settle() {
        boolean finishing;
        synchronized (lock) {
            finishing = state == State.RUNNING;
            if (finishing) {
                state = State.FINISHING;
            }
            timers.forEach(timer -> timer.cancel(false));
        }
        if (finishing) {
            try {
                R value = finish.finish();
                synchronized (lock) {
                    state = State.SUCCEEDED;
                }
                result.complete(value);
                if (elapsedMillis() >= PROGRESS_LOG_INTERVAL.toMillis()) {
                    LOG.info("{} done in {} ms, {}", description, elapsedMillis(), progress());
                }
            } catch (TransferFailedException | RuntimeException e) {
                TransferFailedException failure =
                        e instanceof TransferFailedException tfe
                                ? tfe
                                : new TransferFailedException(
                                        TransferFailedException.Reason.LOCAL,
                                        path,
                                        description + " failed: " + e,
                                        e,
                                        false);
                synchronized (lock) {
                    state = State.FAILED;
                }
                stats.failed(direction);
                result.completeExceptionally(failure);
                cleanup.run();
            }
        } else {
            cleanup.run();
        }
        settled.complete(null);
    }

    private void logProgress() {
        synchronized (lock) {
            if (state != State.RUNNING) {
                return;
            }
        }
        LOG.info("{}: {}", description, progress());
    }

    private String progress() {
        long millis = Math.max(1, elapsedMillis());
        long bytes = bytesDone();
        return String.format(
                "%d of %d files, %.1f of %.1f MiB in %.1f s (%.1f MiB/s)",
                filesDone(),
                tasks.size(),
                bytes / 1048576.0,
                totalBytes / 1048576.0,
                millis / 1000.0,
                bytes / 1048576.0 / (millis / 1000.0));
    }

    private static String format(Duration d) {
        return d.toMillis() < 10_000 ? d.toMillis() + " ms" : d.toSeconds() + " s";
    }

    private long elapsedMillis() {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }
}
