package io.taishan.kv.client;

import com.google.common.net.HostAndPort;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.protocol.Wire;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One node of the cluster as the client reaches it: its position in the view's name order, its
 * name, the address named in errors, and its {@link Connections}.
 *
 * @param index -1 and name empty for a seed not yet placed in a view
 */
record KvNode(int index, String name, String address, Connections connections) {

    /** A seed, before its answer says who it is. */
    static KvNode seed(String address, Connections connections) {
        return new KvNode(-1, "", address, connections);
    }

    static KvNode of(int index, String name, String address, Connections connections) {
        return new KvNode(index, name, address, connections);
    }

    /** The same connections at its place in a view. */
    KvNode placed(int newIndex, String newName) {
        return new KvNode(newIndex, newName, address, connections);
    }

    /**
     * The HTTP/2 connections to one address, by lane. Each connection is one TCP stream served by
     * one event-loop thread on either side, and its frames go out in order, so a 1 MiB write batch
     * (or a filter chunk) delays every read queued on the same connection behind it. Reads
     * therefore get connections of their own, taken in turn so that concurrent readers are spread
     * over the event loops; writes, filter fetches and administration share the bulk connection.
     */
    static final class Connections {
        private final ManagedChannel bulk;
        private final KvServiceGrpc.KvServiceBlockingStub bulkBlockingStub;
        private final KvServiceGrpc.KvServiceFutureStub bulkFutureStub;
        private final ManagedChannel[] reads;
        private final AtomicInteger nextRead = new AtomicInteger();

        private Connections(ManagedChannel bulk, ManagedChannel[] reads) {
            this.bulk = bulk;
            this.bulkBlockingStub = KvServiceGrpc.newBlockingStub(bulk);
            this.bulkFutureStub = KvServiceGrpc.newFutureStub(bulk);
            this.reads = reads;
        }

        /**
         * The bulk channel and {@code readChannels} read channels, none connected yet (a channel
         * connects on its first call, or on {@link #connectReads}).
         */
        static Connections open(String address, int readChannels, ChannelSecurity security) {
            ManagedChannel bulk = openChannel(address, security);
            ManagedChannel[] reads = new ManagedChannel[readChannels];
            try {
                for (int i = 0; i < readChannels; i++) {
                    reads[i] = openChannel(address, security);
                }
            } catch (RuntimeException e) {
                bulk.shutdownNow();
                for (ManagedChannel read : reads) {
                    if (read != null) {
                        read.shutdownNow();
                    }
                }
                throw e;
            }
            return new Connections(bulk, reads);
        }

        /**
         * Starts connecting the read channels, so that the first reads do not pay for the
         * handshakes; once the node answered, not while a seed that may be down is tried.
         */
        void connectReads() {
            for (ManagedChannel read : reads) {
                read.getState(true);
            }
        }

        /** Writes, filter fetches, administration. */
        ManagedChannel bulk() {
            return bulk;
        }

        KvServiceGrpc.KvServiceBlockingStub bulkBlockingStub() {
            return bulkBlockingStub;
        }

        KvServiceGrpc.KvServiceFutureStub bulkFutureStub() {
            return bulkFutureStub;
        }

        /** Get, MultiGet and Scan: the read channels in turn. */
        ManagedChannel read() {
            ManagedChannel[] r = reads;
            if (r.length == 1) {
                return r[0];
            }
            return r[Math.floorMod(nextRead.getAndIncrement(), r.length)];
        }

        ManagedChannel channel(Lane lane) {
            return lane == Lane.READ ? read() : bulk;
        }

        List<ManagedChannel> all() {
            List<ManagedChannel> all = new ArrayList<>(reads.length + 1);
            all.add(bulk);
            all.addAll(List.of(reads));
            return all;
        }

        /**
         * After a failed connection a channel waits out its own reconnect backoff (a second and
         * growing) and fails every call at once meanwhile; without this reset retries would never
         * reach the network. All of them: they lead to the same server.
         */
        void resetConnectBackoff() {
            for (ManagedChannel channel : all()) {
                channel.resetConnectBackoff();
            }
        }

        void shutdown() {
            for (ManagedChannel channel : all()) {
                channel.shutdown();
            }
        }

        void shutdownNow() {
            for (ManagedChannel channel : all()) {
                channel.shutdownNow();
            }
        }

        /** Waits until {@code deadlineNanos} ({@link System#nanoTime}) at most. */
        boolean awaitTermination(long deadlineNanos) throws InterruptedException {
            for (ManagedChannel channel : all()) {
                long remaining = deadlineNanos - System.nanoTime();
                if (remaining <= 0 || !channel.awaitTermination(remaining, TimeUnit.NANOSECONDS)) {
                    return false;
                }
            }
            return true;
        }
    }

    /** Which of a node's connections a call takes. */
    enum Lane {
        /** Small latency-bound reads: Get, MultiGet, Scan. */
        READ,
        /** Everything else: writes, filter streams, administration. */
        BULK
    }

    /**
     * A channel to {@code host:port}, plaintext or TLS with the token as {@code security} says.
     * gRPC's own retries are off because {@link RetryingCaller} decides what may be retried (a
     * write must never be), and the inbound size is not capped at gRPC's 4 MiB default because the
     * server bounds its responses by its own limits (scan pages, multi-get batches).
     */
    static ManagedChannel openChannel(String address, ChannelSecurity security) {
        HostAndPort hostAndPort = HostAndPort.fromString(address);
        return security.apply(
                        NettyChannelBuilder.forAddress(
                                hostAndPort.getHost(), hostAndPort.getPort()))
                .eventLoopGroup(ClientThreads.eventLoops())
                .channelType(ClientThreads.channelType())
                .executor(ClientThreads.callbacks())
                .offloadExecutor(ClientThreads.callbacks())
                .disableRetry()
                .maxInboundMessageSize(Integer.MAX_VALUE)
                .flowControlWindow(Wire.FLOW_CONTROL_WINDOW_BYTES)
                .build();
    }
}
