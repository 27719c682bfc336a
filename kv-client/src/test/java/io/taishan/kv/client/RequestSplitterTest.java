package io.taishan.kv.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.taishan.kv.proto.KeyRef;
import io.taishan.kv.proto.MultiGetRequest;
import io.taishan.kv.proto.ShardRef;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.protocol.KvLimits;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RequestSplitterTest {

    private static KvLimits limits(int maxRequestBytes, int maxOps) {
        return new KvLimits(64, 1000, maxRequestBytes, maxOps, 100, 1 << 20);
    }

    private static List<ShardWrite> shards(int shardCount, int opsPerShard, int valueBytes) {
        WriteBatch batch = new WriteBatch("t");
        for (int shard = 0; shard < shardCount; shard++) {
            ShardLease lease = new ShardLease("t", shard, 1);
            for (int op = 0; op < opsPerShard; op++) {
                batch.put(lease, new byte[] {(byte) op}, new byte[valueBytes]);
            }
        }
        return batch.shardWrites();
    }

    @Test
    void packsShardsUpToTheOpLimitWithoutSplittingAShard() {
        List<WriteRequest> requests =
                new RequestSplitter(limits(1 << 20, 7)).splitWrites("t", shards(5, 3, 1));

        // 3 + 3 fit in 7, a third shard would not.
        assertThat(requests).hasSize(3);
        List<Integer> shardsSeen = new ArrayList<>();
        for (WriteRequest request : requests) {
            assertThat(request.getTable()).isEqualTo("t");
            int ops = request.getShardsList().stream().mapToInt(ShardWrite::getOpsCount).sum();
            assertThat(ops).isLessThanOrEqualTo(7);
            request.getShardsList().forEach(s -> shardsSeen.add(s.getShard()));
            request.getShardsList().forEach(s -> assertThat(s.getOpsCount()).isEqualTo(3));
        }
        assertThat(shardsSeen).containsExactly(0, 1, 2, 3, 4);
    }

    @Test
    void packsShardsUpToTheByteLimit() {
        List<ShardWrite> shards = shards(4, 2, 100);
        int maxBytes = 500;
        List<WriteRequest> requests =
                new RequestSplitter(limits(maxBytes, 1000)).splitWrites("t", shards);

        assertThat(requests).hasSizeGreaterThan(1);
        for (WriteRequest request : requests) {
            assertThat(request.getSerializedSize()).isLessThanOrEqualTo(maxBytes);
        }
        assertThat(requests.stream().mapToInt(WriteRequest::getShardsCount).sum()).isEqualTo(4);
    }

    @Test
    void aShardOverTheLimitAloneFailsNamingItAndTheLimit() {
        RequestSplitter splitter = new RequestSplitter(limits(1 << 20, 4));
        assertThatThrownBy(() -> splitter.splitWrites("t", shards(2, 5, 1)))
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("shard 0")
                .hasMessageContaining("5 ops")
                .hasMessageContaining("4 ops");
    }

    @Test
    void checksKeyAndValueSizesNamingTheSizeAndTheLimit() {
        RequestSplitter splitter = new RequestSplitter(limits(1 << 20, 1000));
        WriteBatch bigValue =
                new WriteBatch("t")
                        .append(new ShardLease("t", 2, 1), new byte[] {1}, new byte[1001]);
        assertThatThrownBy(() -> splitter.checkOps(bigValue.shardWrites()))
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("value of 1001 bytes")
                .hasMessageContaining("limit of 1000 bytes")
                .hasMessageContaining("shard 2");
        WriteBatch bigKey = new WriteBatch("t").delete(new ShardLease("t", 0, 1), new byte[65]);
        assertThatThrownBy(() -> splitter.checkOps(bigKey.shardWrites()))
                .isInstanceOf(LimitExceededException.class)
                .hasMessageContaining("key of 65 bytes")
                .hasMessageContaining("limit of 64 bytes");
        WriteBatch atLimit =
                new WriteBatch("t")
                        .put(new ShardLease("t", 0, 1), new byte[64], new byte[1000])
                        .deleteRange(new ShardLease("t", 0, 1), new byte[64], new byte[64]);
        splitter.checkOps(atLimit.shardWrites());
    }

    @Test
    void splitsMultiGetKeysInOrder() {
        ShardRef shard = ShardRef.newBuilder().setShard(1).setEpoch(1).build();
        List<KeyRef> keys = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            keys.add(
                    KeyRef.newBuilder()
                            .setShard(shard)
                            .setKey(ByteString.copyFrom(new byte[] {(byte) i}))
                            .build());
        }
        List<MultiGetRequest> requests =
                new RequestSplitter(limits(1 << 20, 3)).splitMultiGet("t", keys);

        assertThat(requests).extracting(MultiGetRequest::getKeysCount).containsExactly(3, 3, 1);
        List<KeyRef> rejoined = new ArrayList<>();
        requests.forEach(r -> rejoined.addAll(r.getKeysList()));
        assertThat(rejoined).isEqualTo(keys);
    }

    @Test
    void backoffGrowsExponentiallyWithinItsBoundsAndJitters() {
        RetryingCaller caller =
                new RetryingCaller(
                        KvClientConfig.forAddresses("a:1")
                                .backoff(
                                        java.time.Duration.ofMillis(10),
                                        java.time.Duration.ofMillis(100))
                                .build(),
                        null);
        long ms = 1_000_000;
        for (int i = 0; i < 50; i++) {
            assertThat(caller.backoffNanos(1)).isBetween(5 * ms, 10 * ms);
            assertThat(caller.backoffNanos(2)).isBetween(10 * ms, 20 * ms);
            assertThat(caller.backoffNanos(4)).isBetween(40 * ms, 80 * ms);
            assertThat(caller.backoffNanos(5)).isBetween(50 * ms, 100 * ms);
            assertThat(caller.backoffNanos(63)).isBetween(50 * ms, 100 * ms);
        }
    }
}
