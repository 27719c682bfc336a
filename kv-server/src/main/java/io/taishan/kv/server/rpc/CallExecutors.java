package io.taishan.kv.server.rpc;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;
import io.taishan.kv.proto.KvServiceGrpc;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.annotation.Nullable;

/**
 * Where the server runs each call; given to gRPC as its call executor over a direct executor.
 *
 * <p>gRPC's default hands every call from the Netty event loop that read it to a thread of an
 * unbounded cached pool, and the response back to the event loop: two thread hand-offs per call, a
 * large part of a loopback {@code Get} on 2 cores. So the cheap calls run on the event loop itself:
 * {@code Get} and {@code MultiGet} (RocksDB lookups, mostly from its block cache; they fall back to
 * the pool whenever they would wait for a lock or open a shard, see {@link DataRpcs}), {@code
 * Health} and {@code ClusterInfo} (memory only, and a health check should answer even when the pool
 * is busy). Every other call (writes, snapshots, restores, clones, scans, filter fetches, table
 * administration: flushes, fsyncs, file system work, pages of up to a MiB) runs on a bounded pool,
 * parsing its request there too, so that it never holds up the reads of the connections its event
 * loop serves, and a burst of them cannot start threads without limit.
 */
public final class CallExecutors implements ServerCallExecutorSupplier, AutoCloseable {
    /**
     * Calls block on I/O (fsyncs of snapshots, WAL syncs, RocksDB write stalls), so more threads
     * than cores; each Flink backend keeps one write in flight, so this many concurrent writers run
     * before any has to queue.
     */
    static final int POOL_THREADS = Math.max(16, 4 * Runtime.getRuntime().availableProcessors());

    private static final Set<String> INLINE =
            Set.of(
                    KvServiceGrpc.getGetMethod().getFullMethodName(),
                    KvServiceGrpc.getMultiGetMethod().getFullMethodName(),
                    KvServiceGrpc.getHealthMethod().getFullMethodName(),
                    KvServiceGrpc.getClusterInfoMethod().getFullMethodName());

    private final ThreadPoolExecutor pool;

    public CallExecutors() {
        this(POOL_THREADS);
    }

    CallExecutors(int threads) {
        this.pool =
                new ThreadPoolExecutor(
                        threads,
                        threads,
                        60,
                        TimeUnit.SECONDS,
                        new LinkedBlockingQueue<>(),
                        new ThreadFactory() {
                            private final AtomicInteger count = new AtomicInteger();

                            @Override
                            public Thread newThread(Runnable runnable) {
                                Thread thread =
                                        new Thread(runnable, "kv-call-" + count.incrementAndGet());
                                thread.setDaemon(true);
                                // Made from whichever thread calls first: in a node embedded in a
                                // TaskManager not a job's class loader (see ClientThreads).
                                thread.setContextClassLoader(CallExecutors.class.getClassLoader());
                                return thread;
                            }
                        });
        // Idle threads go: a node mostly serves reads, which never come here.
        pool.allowCoreThreadTimeOut(true);
    }

    /** Null (the event loop, gRPC's direct executor) for the inline calls, the pool otherwise. */
    @Nullable
    @Override
    public <ReqT, RespT> Executor getExecutor(ServerCall<ReqT, RespT> call, Metadata metadata) {
        return INLINE.contains(call.getMethodDescriptor().getFullMethodName()) ? null : pool;
    }

    /** Where an inline call goes on when it would have to wait. */
    Executor pool() {
        return pool;
    }

    /** After the gRPC server has terminated: no call is left that could need the pool. */
    @Override
    public void close() {
        pool.shutdown();
    }
}
