package io.taishan.kv.server.rpc;

import com.google.protobuf.ByteString;
import io.taishan.kv.proto.ShardWrite;
import io.taishan.kv.proto.WriteOp;
import io.taishan.kv.proto.WriteRequest;
import io.taishan.kv.server.rpc.stream.LargeValueBudget;
import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.Shard;
import io.taishan.kv.server.storage.TableStore;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Checks a whole Write request before the storage sees any of it: its size and op count, every
 * shard this node's and named once, every op well formed (keys and inline values within the limits,
 * ranges not reversed, snapshot ids not negative, an op set) and every staged value it names
 * uploaded for that shard. A refused request changes nothing; its message names the op.
 */
final class WriteValidator {
    private final RequestLimits limits;
    private final RequestTargets targets;
    private final LargeValueBudget largeValues;

    WriteValidator(RequestLimits limits, RequestTargets targets, LargeValueBudget largeValues) {
        this.limits = limits;
        this.targets = targets;
        this.largeValues = largeValues;
    }

    /**
     * Checks the request and takes the staged values its ops name into {@code staged} (the caller
     * releases their bytes, also when this fails); returns the request's ops by kind ({@link
     * WriteStats#newOpCounts}).
     */
    int[] validate(TableStore table, WriteRequest request, Map<Long, byte[]> staged) {
        int serializedBytes = request.getSerializedSize();
        if (!limits.requestFits(serializedBytes)) {
            throw limits.requestTooLarge(serializedBytes, writeWhere(table));
        }
        long ops = 0;
        for (ShardWrite w : request.getShardsList()) {
            ops += w.getOpsCount();
        }
        if (!limits.opCountFits(ops)) {
            throw limits.tooManyOps(ops, writeWhere(table));
        }
        Set<Integer> seen = new HashSet<>();
        int[] opCounts = WriteStats.newOpCounts();
        for (ShardWrite w : request.getShardsList()) {
            Shard shard = targets.ownedShard(table, w.getShard());
            if (!seen.add(w.getShard())) {
                throw KvServerException.invalid(
                        writeWhere(table)
                                + ": shard "
                                + w.getShard()
                                + " appears twice in one request");
            }
            for (int i = 0; i < w.getOpsCount(); i++) {
                WriteOp op = w.getOps(i);
                validateOp(op, table, shard, i, staged);
                opCounts[op.getOpCase().ordinal()]++;
            }
        }
        return opCounts;
    }

    private static String writeWhere(TableStore table) {
        return "Write to table '" + table.name() + "'";
    }

    /** Where an op is, for its error message; built only when the op is refused. */
    private static String opWhere(TableStore table, Shard shard, int op) {
        return writeWhere(table) + ", " + shard + ", op #" + op;
    }

    private void validateOp(
            WriteOp op, TableStore table, Shard shard, int i, Map<Long, byte[]> staged) {
        switch (op.getOpCase()) {
            case PUT -> {
                checkKey(op.getPut().getKey(), table, shard, i);
                checkValue(op.getPut().getValue(), table, shard, i);
                takeStaged(
                        op.getPut().getStagedValueId(),
                        op.getPut().getValue(),
                        table,
                        shard,
                        i,
                        staged);
            }
            case DELETE -> checkKey(op.getDelete().getKey(), table, shard, i);
            case DELETE_RANGE -> {
                checkKey(op.getDeleteRange().getBeginKey(), table, shard, i);
                checkKey(op.getDeleteRange().getEndKey(), table, shard, i);
                if (ByteString.unsignedLexicographicalComparator()
                                .compare(
                                        op.getDeleteRange().getBeginKey(),
                                        op.getDeleteRange().getEndKey())
                        > 0) {
                    throw KvServerException.invalid(
                            opWhere(table, shard, i)
                                    + ": delete-range begin key is after its end key (bad range)");
                }
            }
            case APPEND -> {
                checkKey(op.getAppend().getKey(), table, shard, i);
                checkValue(op.getAppend().getValue(), table, shard, i);
                takeStaged(
                        op.getAppend().getStagedValueId(),
                        op.getAppend().getValue(),
                        table,
                        shard,
                        i,
                        staged);
            }
            case SNAPSHOT -> {
                long id = op.getSnapshot().getSnapshotId();
                if (id < 0) {
                    RequestTargets.checkSnapshotId(id, opWhere(table, shard, i));
                }
            }
            case OP_NOT_SET ->
                    throw KvServerException.invalid(opWhere(table, shard, i) + ": no op set");
        }
    }

    private void takeStaged(
            long id,
            ByteString inlineValue,
            TableStore table,
            Shard shard,
            int op,
            Map<Long, byte[]> staged) {
        if (id == 0) {
            return;
        }
        if (!inlineValue.isEmpty()) {
            throw KvServerException.invalid(
                    opWhere(table, shard, op) + ": both a value and a staged value id");
        }
        if (staged.containsKey(id)) {
            throw KvServerException.invalid(
                    opWhere(table, shard, op) + ": staged value " + id + " named twice");
        }
        LargeValueBudget.Staged s = largeValues.take(id, table.name(), shard.shard());
        if (s == null) {
            throw KvServerException.invalid(
                    opWhere(table, shard, op)
                            + ": no staged value "
                            + Long.toUnsignedString(id)
                            + " for this shard (never uploaded, already written, or expired"
                            + " after 2 minutes unused)");
        }
        staged.put(id, s.value());
    }

    private void checkKey(ByteString key, TableStore table, Shard shard, int op) {
        if (!limits.keyFits(key)) {
            throw limits.keyTooLarge(key, opWhere(table, shard, op));
        }
    }

    private void checkValue(ByteString value, TableStore table, Shard shard, int op) {
        if (!limits.valueFits(value)) {
            throw limits.valueTooLarge(value, opWhere(table, shard, op));
        }
    }
}
