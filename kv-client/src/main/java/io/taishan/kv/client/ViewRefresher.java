package io.taishan.kv.client;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a client's routing on the cluster's current view: discovers the cluster again ({@link
 * ClusterConnections#rediscover}) and, when its view changed and every node of it answers with it,
 * installs it in the {@link ShardRouter} and closes the connections to nodes that left. A view the
 * nodes do not agree on (a change under way) is not taken: the failure says which node thinks what,
 * and the client keeps routing by the view it has, which every node checks anyway.
 *
 * <p>A refusal seen on a gRPC thread must not wait for the network there, so {@link #refreshLater}
 * runs on a thread of its own (none while idle), at most one refresh queued at a time; a caller
 * that takes shards and can wait uses {@link #refreshNow}. One refresh at a time.
 */
final class ViewRefresher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ViewRefresher.class);

    private final ClusterConnections connections;
    private final ShardRouter router;
    private final AtomicBoolean queued = new AtomicBoolean();
    private final ThreadPoolExecutor thread;

    @GuardedBy("this")
    private boolean closed;

    ViewRefresher(ClusterConnections connections, ShardRouter router) {
        this.connections = connections;
        this.router = router;
        this.thread =
                new ThreadPoolExecutor(
                        1,
                        1,
                        30,
                        TimeUnit.SECONDS,
                        new LinkedBlockingQueue<>(),
                        ClientThreads.daemon("taishan-kv-client-view"));
        thread.allowCoreThreadTimeOut(true);
    }

    /**
     * Discovers the cluster again, asking {@code askFirst} first, and routes by its view from now
     * on if it changed.
     *
     * @return whether the view changed
     * @throws KvException when the nodes do not agree on one view, or a node of it does not answer
     */
    synchronized boolean refreshNow(@Nullable String askFirst) {
        if (closed) {
            return false;
        }
        ShardRouter.Routing current = router.routing();
        ClusterDiscovery.Cluster fresh = connections.rediscover(askFirst, current);
        if (fresh == null) {
            return false;
        }
        router.install(new ShardRouter.Routing(fresh.view(), fresh.nodes()));
        connections.retainOnly(fresh.nodes());
        LOG.info(
                "kv-server cluster changed: view {} ({}) replaces {} ({})",
                fresh.view().fingerprintHex(),
                fresh.view(),
                current.view().fingerprintHex(),
                current.view());
        return true;
    }

    /** {@link #refreshNow} on the refresher's thread; a failure is logged. */
    void refreshLater(@Nullable String askFirst) {
        if (!queued.compareAndSet(false, true)) {
            return;
        }
        try {
            thread.execute(
                    () -> {
                        queued.set(false);
                        try {
                            refreshNow(askFirst);
                        } catch (RuntimeException e) {
                            LOG.warn(
                                    "Cannot refresh the kv-server cluster's view: {}",
                                    e.getMessage());
                        }
                    });
        } catch (RejectedExecutionException closedMeanwhile) {
            queued.set(false);
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
        synchronized (this) {
            closed = true;
        }
    }
}
