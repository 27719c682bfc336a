package io.taishan.kv.server.rpc;

import io.taishan.kv.proto.WriteOp;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the node's writes applied since it started: per-shard write batches, ops by kind, and shard
 * snapshots taken (by markers and by {@code Snapshot} calls). Counted once per request after it was
 * applied, so a refused request counts nothing; read by the metrics endpoint.
 */
public final class WriteStats {
    private static final WriteOp.OpCase[] OP_CASES = WriteOp.OpCase.values();

    private final LongAdder shardBatches = new LongAdder();
    private final LongAdder[] ops = new LongAdder[OP_CASES.length];
    private final LongAdder snapshots = new LongAdder();
    private final LongAdder reusedSnapshots = new LongAdder();

    WriteStats() {
        for (int i = 0; i < ops.length; i++) {
            ops[i] = new LongAdder();
        }
    }

    /** A counter per op kind, indexed by {@link WriteOp.OpCase#ordinal()}, for one request. */
    static int[] newOpCounts() {
        return new int[OP_CASES.length];
    }

    void applied(int shards, int[] opCounts) {
        shardBatches.add(shards);
        for (int i = 0; i < opCounts.length; i++) {
            if (opCounts[i] != 0) {
                ops[i].add(opCounts[i]);
            }
        }
    }

    void snapshotTaken(boolean reused) {
        (reused ? reusedSnapshots : snapshots).increment();
    }

    /**
     * One per shard per applied Write request: each is one RocksDB batch (or a few, at markers).
     */
    public long shardBatches() {
        return shardBatches.sum();
    }

    /** Ops applied of this kind ({@code SNAPSHOT}: markers). */
    public long ops(WriteOp.OpCase kind) {
        return ops[kind.ordinal()].sum();
    }

    /** Shard snapshots newly cut (flush and checkpoint). */
    public long snapshots() {
        return snapshots.sum();
    }

    /** Shard snapshots made by hard-linking the previous one (no write since it). */
    public long reusedSnapshots() {
        return reusedSnapshots.sum();
    }
}
