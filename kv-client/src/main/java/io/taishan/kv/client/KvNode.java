package io.taishan.kv.client;

import com.google.common.net.HostAndPort;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.taishan.kv.proto.KvServiceGrpc;

/**
 * One node of the cluster as the client reaches it: its place in the shard map, the address named
 * in errors, and one channel with its stubs.
 */
record KvNode(
        int index,
        String address,
        ManagedChannel channel,
        KvServiceGrpc.KvServiceBlockingStub blockingStub,
        KvServiceGrpc.KvServiceFutureStub futureStub) {

    static KvNode of(int index, String address, ManagedChannel channel) {
        return new KvNode(
                index,
                address,
                channel,
                KvServiceGrpc.newBlockingStub(channel),
                KvServiceGrpc.newFutureStub(channel));
    }

    KvNode withIndex(int newIndex) {
        return new KvNode(newIndex, address, channel, blockingStub, futureStub);
    }

    /**
     * A plaintext channel to {@code host:port}. gRPC's own retries are off because {@link
     * RetryingCaller} decides what may be retried (a write must never be), and the inbound size is
     * not capped at gRPC's 4 MiB default because the server bounds its responses by its own limits
     * (scan pages, multi-get batches).
     */
    static ManagedChannel openChannel(String address) {
        HostAndPort hostAndPort = HostAndPort.fromString(address);
        return NettyChannelBuilder.forAddress(hostAndPort.getHost(), hostAndPort.getPort())
                .usePlaintext()
                .disableRetry()
                .maxInboundMessageSize(Integer.MAX_VALUE)
                .build();
    }
}
