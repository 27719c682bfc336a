package io.taishan.kv.client;

import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads of the client, made so that none keeps a job's class loader.
 *
 * <p>A new thread inherits the context class loader of the thread that starts it, and threads
 * shared across jobs are started lazily, by whichever thread first needs them: in a TaskManager
 * that is a task thread, whose context class loader is its job's user-code class loader. Such a
 * thread outlives the job and pins that loader and every class of the job (a session cluster
 * running job after job fills its metaspace), and a library that resolves classes through the
 * context loader (log4j, for one) then fails with "Trying to access closed classloader". So every
 * thread the client, the backend and the cache start gets the class loader of this jar as its
 * context loader: Flink's when the plugin sits in {@code lib/}.
 *
 * <p>gRPC's default event loops and callback executor are started the same lazy way, so channels
 * use {@link #eventLoops()}, {@link #channelType()} and {@link #callbacks()} instead: one set per
 * class loader of this jar, daemon threads that live as long as it (in {@code lib/}: the
 * TaskManager), as gRPC's shared ones do while any channel is open. Epoll where Netty has it, as
 * gRPC chooses by default.
 */
public final class ClientThreads {
    private static final ClassLoader LOADER = ClientThreads.class.getClassLoader();

    private ClientThreads() {}

    /**
     * Daemon threads named {@code name-1}, {@code name-2}, ..., with this jar's class loader as
     * their context class loader.
     */
    public static ThreadFactory daemon(String name) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, name + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            thread.setContextClassLoader(LOADER);
            return thread;
        };
    }

    /** The event loops every channel of this class loader shares. */
    static EventLoopGroup eventLoops() {
        return Netty.GROUP;
    }

    /** The socket channel class that fits {@link #eventLoops()}. */
    static Class<? extends Channel> channelType() {
        return Netty.CHANNEL_TYPE;
    }

    /** gRPC's callback executor for every channel of this class loader (a cached pool). */
    static ExecutorService callbacks() {
        return Netty.CALLBACKS;
    }

    /** Made on first use only: a kv-admin command that opens no channel starts no thread. */
    private static final class Netty {
        static final boolean EPOLL = Epoll.isAvailable();
        static final EventLoopGroup GROUP = group();
        static final Class<? extends Channel> CHANNEL_TYPE =
                EPOLL ? EpollSocketChannel.class : NioSocketChannel.class;
        static final ExecutorService CALLBACKS =
                Executors.newCachedThreadPool(daemon("taishan-kv-client-callback"));

        private static EventLoopGroup group() {
            // Netty's factory (FastThreadLocalThread), with the context class loader fixed.
            ThreadFactory threads =
                    new DefaultThreadFactory("taishan-kv-client-event-loop", true) {
                        @Override
                        protected Thread newThread(Runnable r, String name) {
                            Thread thread = super.newThread(r, name);
                            thread.setContextClassLoader(LOADER);
                            return thread;
                        }
                    };
            // 0: Netty's default, two per core, as gRPC's shared group.
            return EPOLL ? new EpollEventLoopGroup(0, threads) : new NioEventLoopGroup(0, threads);
        }
    }
}
