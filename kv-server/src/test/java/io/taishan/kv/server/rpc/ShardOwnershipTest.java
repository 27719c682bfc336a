package io.taishan.kv.server.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.taishan.kv.proto.ClusterInfoRequest;
import io.taishan.kv.proto.CreateTableRequest;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.protocol.KvErrors;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A node of a (partly imaginary) three-node cluster serves only the shards the map gives it. */
class ShardOwnershipTest {
    @Test
    void shardsOfOtherNodesAreRejectedNamingTheOwner() throws InterruptedException {
        // Node 1 of three; the other two addresses are never contacted.
        List<String> nodes = List.of("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3");
        try (EmbeddedKvServer server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .clusterNodes(nodes)
                                .nodeIndex(1)
                                .blockCacheBytes(16 << 20)
                                .writeBufferBytes(8 << 20)
                                .build())) {
            ManagedChannel channel =
                    NettyChannelBuilder.forTarget(server.address()).usePlaintext().build();
            try {
                var kv =
                        KvServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(1, TimeUnit.MINUTES);
                assertThat(kv.clusterInfo(ClusterInfoRequest.getDefaultInstance()))
                        .satisfies(
                                i -> {
                                    assertThat(i.getNodesList()).isEqualTo(nodes);
                                    assertThat(i.getSelfIndex()).isEqualTo(1);
                                });
                kv.createTable(
                        CreateTableRequest.newBuilder().setName("t").setShardCount(9).build());
                // floor(s * 3 / 9) == 1 for s in 3..5.
                for (int s = 3; s <= 5; s++) {
                    assertThat(
                                    kv.openShard(
                                                    OpenShardRequest.newBuilder()
                                                            .setTable("t")
                                                            .setShard(s)
                                                            .build())
                                            .getEpoch())
                            .isPositive();
                }
                for (int s : new int[] {0, 2, 6, 8}) {
                    int shard = s;
                    assertThatThrownBy(
                                    () ->
                                            kv.openShard(
                                                    OpenShardRequest.newBuilder()
                                                            .setTable("t")
                                                            .setShard(shard)
                                                            .build()))
                            .isInstanceOfSatisfying(
                                    StatusRuntimeException.class,
                                    e -> {
                                        assertThat(e.getStatus().getCode())
                                                .isEqualTo(Status.Code.FAILED_PRECONDITION);
                                        assertThat(e.getTrailers().get(KvErrors.ERROR_CODE_KEY))
                                                .isEqualTo(ErrorCode.SHARD_NOT_OWNED.name());
                                        String owner = nodes.get(shard / 3);
                                        assertThat(e.getStatus().getDescription())
                                                .contains("table 't' shard " + shard)
                                                .contains("owned by node " + shard / 3)
                                                .contains(owner);
                                    });
                }
            } finally {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        }
    }
}
