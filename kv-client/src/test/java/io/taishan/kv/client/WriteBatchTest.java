package io.taishan.kv.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.WriteOp;
import java.util.List;
import org.junit.jupiter.api.Test;

class WriteBatchTest {
    private final ShardLease shard3 = new ShardLease("t", 3, 7);
    private final ShardLease shard1 = new ShardLease("t", 1, 2);

    @Test
    void keepsOpsInOrderPerShardAndShardsInFirstTouchOrder() {
        WriteBatch batch =
                new WriteBatch("t")
                        .put(shard3, b("a"), b("1"))
                        .append(shard1, b("l"), b("x"))
                        .delete(shard3, b("a"))
                        .deleteRange(shard1, b("m"), b("n"))
                        .snapshotMarker(shard3, 42, true);

        assertThat(batch.shards()).containsExactly(3, 1);
        assertThat(batch.opCount()).isEqualTo(5);
        List<ShardWrite> writes = batch.shardWrites();
        assertThat(writes).extracting(ShardWrite::getShard).containsExactly(3, 1);
        assertThat(writes.get(0).getEpoch()).isEqualTo(7);
        assertThat(writes.get(0).getOpsList())
                .extracting(WriteOp::getOpCase)
                .containsExactly(
                        WriteOp.OpCase.PUT, WriteOp.OpCase.DELETE, WriteOp.OpCase.SNAPSHOT);
        assertThat(writes.get(0).getOps(2).getSnapshot().getSnapshotId()).isEqualTo(42);
        assertThat(writes.get(0).getOps(2).getSnapshot().getPinned()).isTrue();
        assertThat(writes.get(1).getOpsList())
                .extracting(WriteOp::getOpCase)
                .containsExactly(WriteOp.OpCase.APPEND, WriteOp.OpCase.DELETE_RANGE);
    }

    @Test
    void copiesTheBytesPassedIn() {
        byte[] key = b("k");
        byte[] value = b("v");
        WriteBatch batch = new WriteBatch("t").put(shard1, key, value);
        key[0] = 'x';
        value[0] = 'x';
        WriteOp put = batch.shardWrites().get(0).getOps(0);
        assertThat(put.getPut().getKey().toStringUtf8()).isEqualTo("k");
        assertThat(put.getPut().getValue().toStringUtf8()).isEqualTo("v");
    }

    @Test
    void aScanOnlyPutIsAPutMarkedOnTheWire() {
        WriteBatch batch =
                new WriteBatch("t")
                        .put(shard1, b("k"), b("v"))
                        .putScanOnly(shard1, b("timer"), new byte[0]);

        List<WriteOp> ops = batch.shardWrites().get(0).getOpsList();
        assertThat(ops).extracting(WriteOp::getOpCase).containsOnly(WriteOp.OpCase.PUT);
        assertThat(ops.get(0).getPut().getScanOnly()).isFalse();
        assertThat(ops.get(1).getPut().getScanOnly()).isTrue();
        assertThat(ops.get(1).getPut().getKey().toStringUtf8()).isEqualTo("timer");
        assertThat(ops.get(1).getPut().getValue().isEmpty()).isTrue();
        assertThat(batch.opCount()).isEqualTo(2);
        assertThat(batch.estimatedBytes())
                .isGreaterThanOrEqualTo(batch.shardWrites().get(0).getSerializedSize());
    }

    @Test
    void rejectsTwoEpochsForOneShard() {
        WriteBatch batch = new WriteBatch("t").put(shard3, b("a"), b("1"));
        assertThatThrownBy(() -> batch.put(new ShardLease("t", 3, 8), b("b"), b("2")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("two epochs for shard 3")
                .hasMessageContaining("7")
                .hasMessageContaining("8");
        assertThat(batch.opCount()).isEqualTo(1);
    }

    @Test
    void rejectsALeaseOfAnotherTable() {
        WriteBatch batch = new WriteBatch("t");
        assertThatThrownBy(() -> batch.delete(new ShardLease("other", 1, 1), b("a")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'other'")
                .hasMessageContaining("'t'");
        assertThat(batch.isEmpty()).isTrue();
    }

    @Test
    void estimatesGrowWithPayload() {
        WriteBatch batch = new WriteBatch("t");
        assertThat(batch.estimatedBytes()).isZero();
        batch.put(shard1, new byte[10], new byte[100]);
        long afterOne = batch.estimatedBytes();
        assertThat(afterOne).isGreaterThanOrEqualTo(110);
        batch.put(shard1, new byte[10], new byte[100]);
        assertThat(batch.estimatedBytes()).isEqualTo(2 * afterOne);
    }

    static byte[] b(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
}
