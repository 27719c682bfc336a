package io.taishan.backend.remote;

import io.taishan.kv.client.ClientThreads;
import io.taishan.kv.client.KvClientConfig;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.KvStores;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client (channels, threads) per kv-server cluster and credentials per JVM, shared by every
 * subtask of a TaskManager that uses it, and closed {@link #LINGER} after the last one lets go,
 * unless another takes it meanwhile. Clients are shared by equal {@link KvClientConfig}s, which
 * differ whenever their tokens do, so two jobs with different tokens never share a client; logs
 * name a client by the config's string, which hides the token.
 */
public final class SharedKvStores {
    private static final Logger LOG = LoggerFactory.getLogger(SharedKvStores.class);

    /**
     * How long the last subtask's close waits for queued housekeeping (snapshot drops) to reach the
     * server: long enough for drops on a healthy server (milliseconds each), short enough that a
     * hung server does not hold a task's cancellation for long. A drop lost here is garbage on the
     * server, not lost state; the operator's garbage collection finds it.
     */
    private static final Duration BACKGROUND_DRAIN_TIMEOUT = Duration.ofSeconds(5);

    /**
     * A restore fetches one filter per owned shard, and each first fetch also opens the shard on
     * the server (a RocksDB open, 5-20 ms): measured 19 ms per shard with two threads, so eight
     * (the server's default filter.max-concurrent-fetches) to shorten the window in which a
     * restored shard's reads of absent keys still go to the server.
     */
    private static final int FILTER_FETCH_THREADS = 8;

    /**
     * How long a client outlives its last subtask. A failover cancels every subtask of a
     * TaskManager and deploys them again moments later; each restore then connected anew
     * (discovery, channels, a TLS handshake: 20-40 ms, more on a busy machine) where the client of
     * a moment before would have served.
     */
    static final Duration LINGER = Duration.ofSeconds(30);

    @GuardedBy("SharedKvStores.class")
    private static final Map<KvClientConfig, Shared> SHARED = new HashMap<>();

    /** Closes the clients whose linger ran out; one daemon thread for all of them. */
    private static final ScheduledExecutorService LINGERING =
            Executors.newSingleThreadScheduledExecutor(daemon("taishan-kv-client-linger"));

    private SharedKvStores() {}

    /** Connects, or joins an existing connection with the same settings. */
    public static Handle acquire(KvClientConfig config) {
        synchronized (SharedKvStores.class) {
            Shared shared = SHARED.get(config);
            if (shared == null) {
                shared = new Shared(config, KvStores.connect(config));
                SHARED.put(config, shared);
            } else if (shared.lingering != null) {
                shared.lingering.cancel(false);
                shared.lingering = null;
            }
            shared.references++;
            return new Handle(shared);
        }
    }

    private static void release(Shared shared) {
        synchronized (SharedKvStores.class) {
            if (--shared.references > 0) {
                return;
            }
            shared.lingering =
                    LINGERING.schedule(
                            () -> closeIfUnused(shared), LINGER.toMillis(), TimeUnit.MILLISECONDS);
        }
        // Snapshot drops queued by the last checkpoint notifications reach the server before the
        // last subtask's close returns, as they would before the client closed: the TaskManager
        // may be gone before the linger ends, and a drop lost is repaired only if the job ever
        // checkpoints again.
        awaitHousekeeping(shared);
    }

    private static void awaitHousekeeping(Shared shared) {
        try {
            shared.background
                    .submit(() -> {})
                    .get(BACKGROUND_DRAIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            LOG.warn(
                    "Housekeeping calls to {} still running after {}",
                    shared.id,
                    BACKGROUND_DRAIN_TIMEOUT);
        } catch (RejectedExecutionException | ExecutionException e) {
            // closed meanwhile: its own close drained it
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeIfUnused(Shared shared) {
        synchronized (SharedKvStores.class) {
            if (shared.references > 0 || SHARED.get(shared.config) != shared) {
                return;
            }
            SHARED.remove(shared.config);
        }
        shared.scheduler.shutdownNow();
        shared.filterFetches.shutdownNow();
        // Snapshot drops queued by the last checkpoint notifications must reach the server before
        // the client goes: a drop lost here is repaired only if the job ever checkpoints again.
        shared.background.shutdown();
        try {
            if (!shared.background.awaitTermination(
                    BACKGROUND_DRAIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warn(
                        "Housekeeping calls to {} still running after {}; closing the client",
                        shared.id,
                        BACKGROUND_DRAIN_TIMEOUT);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // Nothing left in flight matters now (the write queues are closed, the drops drained):
        // no grace, or a hung server would hold the close for it.
        shared.store
                .admin()
                .ifPresentOrElse(admin -> admin.close(Duration.ZERO), shared.store::close);
    }

    /** One subtask's share of a connection; close it exactly once. */
    public static final class Handle implements AutoCloseable {
        private final Shared shared;
        private boolean closed;

        private Handle(Shared shared) {
            this.shared = shared;
        }

        public KvStore store() {
            return shared.store;
        }

        /** Short timer tasks only (interval flushes). */
        public ScheduledExecutorService scheduler() {
            return shared.scheduler;
        }

        /** Blocking housekeeping calls that must not delay the task thread. */
        public ExecutorService background() {
            return shared.background;
        }

        /** Fetches of shards' Bloom filters: blocking, bulky, never on the task thread. */
        public ScheduledExecutorService filterFetches() {
            return shared.filterFetches;
        }

        @Override
        public synchronized void close() {
            if (!closed) {
                closed = true;
                release(shared);
            }
        }
    }

    private static final class Shared {
        final KvClientConfig config;
        final String id;
        final KvStore store;
        final ScheduledExecutorService scheduler =
                Executors.newSingleThreadScheduledExecutor(daemon("taishan-write-flusher"));
        final ExecutorService background =
                Executors.newSingleThreadExecutor(daemon("taishan-housekeeping"));
        final ScheduledExecutorService filterFetches =
                Executors.newScheduledThreadPool(
                        FILTER_FETCH_THREADS, daemon("taishan-filter-fetch"));
        int references;

        /** The close scheduled when the last subtask let go, until another takes the client. */
        @Nullable ScheduledFuture<?> lingering;

        Shared(KvClientConfig config, KvStore store) {
            this.config = config;
            this.id = config.toString();
            this.store = store;
        }
    }

    private static ThreadFactory daemon(String name) {
        return ClientThreads.daemon(name);
    }
}
