package io.taishan.kv.server.rpc;

import io.taishan.kv.server.storage.KvServerException;
import io.taishan.kv.server.storage.Shard;
import io.taishan.kv.server.storage.StorageEngine;
import io.taishan.kv.server.storage.TableMeta;
import io.taishan.kv.server.storage.TableStore;
import java.util.ArrayList;
import java.util.List;

/**
 * What a request names, found or refused with the error the client gets: its table (a valid name
 * that exists), its shards (in range, and this node's under its view of the cluster) and its
 * snapshot ids (not negative).
 */
final class RequestTargets {
    private final StorageEngine storage;
    private final ShardOwnership ownership;

    RequestTargets(StorageEngine storage, ShardOwnership ownership) {
        this.storage = storage;
        this.ownership = ownership;
    }

    /** Fails with INVALID_ARGUMENT for a bad name, TABLE_NOT_FOUND for a missing table. */
    TableStore table(String name) {
        TableMeta.checkName(name);
        return storage.tableStore(name);
    }

    /** Fails unless the shard is in the table's range and this node owns it. */
    Shard ownedShard(TableStore table, int shard) {
        if (shard < 0) {
            throw KvServerException.invalid(
                    "negative shard " + shard + " for table '" + table.name() + "'");
        }
        table.checkShard(shard);
        ownership.checkOwned(table.name(), shard, table.shardCount());
        return table.shard(shard);
    }

    /**
     * The shards of the table this node holds (ever leased, or with data here) but does not own
     * under its view: left behind when the cluster's nodes changed.
     */
    List<Integer> unownedExistingShards(TableStore table) {
        List<Integer> unowned = new ArrayList<>();
        for (int s : table.existingShards()) {
            if (!ownership.owns(s, table.shardCount())) {
                unowned.add(s);
            }
        }
        return unowned;
    }

    /** The shards of the table this node owns that were ever leased or hold data here. */
    List<Integer> ownedExistingShards(TableStore table) {
        List<Integer> owned = new ArrayList<>();
        for (int s : table.existingShards()) {
            if (ownership.owns(s, table.shardCount())) {
                owned.add(s);
            }
        }
        return owned;
    }

    static void checkSnapshotId(long snapshotId, String where) {
        if (snapshotId < 0) {
            throw KvServerException.invalid(where + ": negative snapshot id " + snapshotId);
        }
    }
}
