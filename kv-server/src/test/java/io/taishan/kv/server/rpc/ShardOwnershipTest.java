package io.taishan.kv.server.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.taishan.kv.proto.ClusterInfoRequest;
import io.taishan.kv.proto.ClusterInfoResponse;
import io.taishan.kv.proto.ClusterMember;
import io.taishan.kv.proto.CreateTableRequest;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.HealthRequest;
import io.taishan.kv.proto.KvServiceGrpc;
import io.taishan.kv.proto.OpenShardRequest;
import io.taishan.kv.protocol.ClusterNode;
import io.taishan.kv.protocol.ClusterView;
import io.taishan.kv.protocol.KvErrors;
import io.taishan.kv.protocol.ShardPlacement;
import io.taishan.kv.server.EmbeddedKvServer;
import io.taishan.kv.server.KvServerConfig;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A node of a (partly imaginary) three-node cluster answers ClusterInfo with every node by name and
 * its view's fingerprint, and serves only the shards the placement gives it: the others are refused
 * naming the owner, with the view's fingerprint in a trailer.
 */
class ShardOwnershipTest {
    private static final int SHARDS = 64;

    @Test
    void shardsOfOtherNodesAreRefusedNamingTheOwnerAndTheView() throws InterruptedException {
        // kv2 of three; the other two addresses are never contacted.
        List<ClusterNode> nodes =
                List.of(
                        new ClusterNode("kv3", "127.0.0.1:3"),
                        new ClusterNode("kv1", "127.0.0.1:1"),
                        new ClusterNode("kv2", "127.0.0.1:2"));
        ClusterView view = ClusterView.of(nodes);
        try (EmbeddedKvServer server =
                EmbeddedKvServer.start(
                        KvServerConfig.builder()
                                .clusterNodes(nodes)
                                .nodeName("kv2")
                                .blockCacheBytes(16 << 20)
                                .writeBufferBytes(8 << 20)
                                .build())) {
            ManagedChannel channel =
                    NettyChannelBuilder.forTarget(server.address()).usePlaintext().build();
            try {
                var kv =
                        KvServiceGrpc.newBlockingStub(channel)
                                .withDeadlineAfter(1, TimeUnit.MINUTES);
                ClusterInfoResponse info = kv.clusterInfo(ClusterInfoRequest.getDefaultInstance());
                assertThat(info.getMembersList())
                        .extracting(ClusterMember::getName, ClusterMember::getAddress)
                        .containsExactly(
                                org.assertj.core.groups.Tuple.tuple("kv1", "127.0.0.1:1"),
                                org.assertj.core.groups.Tuple.tuple("kv2", "127.0.0.1:2"),
                                org.assertj.core.groups.Tuple.tuple("kv3", "127.0.0.1:3"));
                assertThat(info.getNodesList())
                        .containsExactly("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3");
                assertThat(info.getSelfIndex()).isEqualTo(1);
                assertThat(info.getViewFingerprint()).isEqualTo(view.fingerprint());
                assertThat(info.getPlacement()).isEqualTo(ShardPlacement.VERSION);
                assertThat(kv.health(HealthRequest.getDefaultInstance()).getNodeName())
                        .isEqualTo("kv2");

                kv.createTable(
                        CreateTableRequest.newBuilder().setName("t").setShardCount(SHARDS).build());
                int owned = 0;
                int refused = 0;
                for (int s = 0; s < SHARDS; s++) {
                    OpenShardRequest open =
                            OpenShardRequest.newBuilder().setTable("t").setShard(s).build();
                    ClusterNode owner = view.owner(s, SHARDS);
                    if (owner.name().equals("kv2")) {
                        assertThat(kv.openShard(open).getEpoch()).isPositive();
                        owned++;
                        continue;
                    }
                    refused++;
                    int shard = s;
                    assertThatThrownBy(() -> kv.openShard(open))
                            .isInstanceOfSatisfying(
                                    StatusRuntimeException.class,
                                    e -> {
                                        assertThat(e.getStatus().getCode())
                                                .isEqualTo(Status.Code.FAILED_PRECONDITION);
                                        assertThat(e.getTrailers().get(KvErrors.ERROR_CODE_KEY))
                                                .isEqualTo(ErrorCode.SHARD_NOT_OWNED.name());
                                        assertThat(e.getTrailers().get(KvErrors.CLUSTER_VIEW_KEY))
                                                .isEqualTo(view.fingerprintHex());
                                        assertThat(e.getStatus().getDescription())
                                                .startsWith(
                                                        "table 't' shard "
                                                                + shard
                                                                + " is owned by "
                                                                + owner.name()
                                                                + " ("
                                                                + owner.address()
                                                                + "), not by kv2 (127.0.0.1:2)")
                                                .contains(view.fingerprintHex());
                                    });
                }
                assertThat(owned).isPositive();
                assertThat(refused).isPositive();
            } finally {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
        }
    }
}
