package io.taishan.backend.restore;

import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.client.ShardStatus;
import io.taishan.snapshot.ShardSnapshotRef;
import io.taishan.snapshot.TaishanManifest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SavepointKeyedStateHandle;
import org.apache.flink.runtime.state.StateSerializerProvider;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.util.StateMigrationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Restores a subtask's shards from the manifests of its state handles: metadata operations only,
 * whatever the state size or the number of key groups (one call per kv-server node). A key group
 * whose snapshot is in this job's table is rolled back to it (failover, rescale within the job);
 * one in another table (a retained checkpoint or native savepoint of another job) is cloned into
 * this job's table. Every other owned shard is opened and, unless the table is new, started empty:
 * it may hold writes of an earlier attempt. Every shard gets a new epoch, which fences any zombie
 * attempt; shards of the table this subtask does not own are never touched.
 */
public final class TaishanRestoreOperation<K> {
    private static final Logger LOG = LoggerFactory.getLogger(TaishanRestoreOperation.class);

    private final Collection<KeyedStateHandle> handles;
    private final KeyGroupRange keyGroupRange;
    private final StateSerializerProvider<K> keySerializerProvider;
    private final ClassLoader userCodeClassLoader;
    private final CloseableRegistry cancelStreamRegistry;

    public TaishanRestoreOperation(
            Collection<KeyedStateHandle> handles,
            KeyGroupRange keyGroupRange,
            StateSerializerProvider<K> keySerializerProvider,
            ClassLoader userCodeClassLoader,
            CloseableRegistry cancelStreamRegistry) {
        this.handles = handles;
        this.keyGroupRange = keyGroupRange;
        this.keySerializerProvider = keySerializerProvider;
        this.userCodeClassLoader = userCodeClassLoader;
        this.cancelStreamRegistry = cancelStreamRegistry;
    }

    /** True when the handles are a canonical savepoint (of any backend): data must be loaded. */
    public static boolean isCanonicalSavepoint(Collection<KeyedStateHandle> handles) {
        return handles.stream().anyMatch(h -> h instanceof SavepointKeyedStateHandle);
    }

    /** Reads the manifests: the state meta info and the snapshot of each owned key group. */
    public Manifests readManifests() throws Exception {
        Map<String, StateMetaInfoSnapshot> metaInfo = new LinkedHashMap<>();
        Map<Integer, ShardSnapshotRef> refs = new HashMap<>();
        boolean keySerializerChecked = false;
        for (KeyedStateHandle handle : handles) {
            if (handle == null) {
                continue;
            }
            if (handle instanceof SavepointKeyedStateHandle) {
                throw new IllegalStateException(
                        "A canonical savepoint mixed with Taishan checkpoints: " + handle);
            }
            if (!(handle instanceof KeyGroupsStateHandle)) {
                throw new IllegalStateException(
                        "Unexpected state handle type, expected a "
                                + KeyGroupsStateHandle.class
                                + " holding a Taishan manifest, but found "
                                + handle.getClass()
                                + ". It was written by another state backend.");
            }
            KeyGroupsStateHandle mine =
                    ((KeyGroupsStateHandle) handle).getIntersection(keyGroupRange);
            if (mine == null) {
                continue;
            }
            TaishanManifest.Contents<K> contents =
                    TaishanManifest.read(mine, userCodeClassLoader, cancelStreamRegistry);
            if (!keySerializerChecked) {
                checkKeySerializer(contents);
                keySerializerChecked = true;
            }
            for (StateMetaInfoSnapshot state : contents.metaInfo().getStateMetaInfoSnapshots()) {
                metaInfo.putIfAbsent(state.getName(), state);
            }
            refs.putAll(contents.refs());
        }
        return new Manifests(new ArrayList<>(metaInfo.values()), refs);
    }

    private void checkKeySerializer(TaishanManifest.Contents<K> contents)
            throws StateMigrationException {
        TypeSerializer<K> current = keySerializerProvider.currentSchemaSerializer();
        TypeSerializerSchemaCompatibility<K> compatibility =
                keySerializerProvider.setPreviousSerializerSnapshotForRestoredState(
                        contents.metaInfo().getKeySerializerSnapshot());
        if (compatibility.isCompatibleAfterMigration() || compatibility.isIncompatible()) {
            throw new StateMigrationException(
                    "The new key serializer ("
                            + current
                            + ") must be compatible with the previous key serializer ("
                            + keySerializerProvider.previousSchemaSerializer()
                            + ").");
        }
    }

    /**
     * Takes every owned shard of {@code table} for {@code writer}, in one call per kv-server node
     * for the restored shards and one for the rest: a key group with a snapshot is rolled back (its
     * own table) or cloned (another job's) to it; every other one is opened, and, unless the table
     * is new, started empty (it may hold writes of an earlier attempt). Returns the leases by key
     * group, and fills {@code unrestored} with the key groups started empty.
     *
     * <p>In a table that existed before, the unpinned snapshots of a restored shard newer than the
     * one restored (all of them, for a clone or a shard started empty) are dropped by the server:
     * they belong to a lost future of this table (attempts after the restored checkpoint, or an
     * earlier run under the same JobID).
     */
    public static ShardLease[] takeShards(
            KvStore store,
            String table,
            String writer,
            boolean newTable,
            KeyGroupRange range,
            Map<Integer, ShardSnapshotRef> refs,
            List<Integer> unrestored) {
        ShardLease[] leases = new ShardLease[range.getNumberOfKeyGroups()];
        List<ShardRestore> restores = new ArrayList<>();
        for (int keyGroup : range) {
            ShardSnapshotRef ref = refs.get(keyGroup);
            if (ref == null) {
                unrestored.add(keyGroup);
            } else {
                restores.add(new ShardRestore(keyGroup, ref.table(), ref.snapshotId()));
            }
        }
        if (!restores.isEmpty()) {
            for (ShardLease lease : store.restoreShards(table, writer, restores)) {
                leases[lease.shard() - range.getStartKeyGroup()] = lease;
            }
        }
        if (!unrestored.isEmpty()) {
            int[] shards = unrestored.stream().mapToInt(Integer::intValue).toArray();
            for (ShardLease lease : store.openShards(table, shards, writer, !newTable)) {
                leases[lease.shard() - range.getStartKeyGroup()] = lease;
            }
        }
        return leases;
    }

    /**
     * After a failed restore that created {@code table}: drops it if nothing but this subtask can
     * have used it, i.e. it holds no snapshot and no shard outside {@code range} was ever opened.
     * Another subtask of the job may be restoring into it at the same time; it then keeps the
     * table, and a sibling that opens a shard right after the drop fails and restores again, which
     * loses nothing: no checkpoint can have completed in a table this new. Best effort: a table
     * left behind is found by the operator's garbage collection.
     *
     * @return whether the table was dropped
     */
    public static boolean dropIfUnused(KvStore store, String table, KeyGroupRange range) {
        // Without the admin facet the shards opened cannot be told: keep the table.
        if (store.admin().isEmpty()) {
            return false;
        }
        try {
            if (!store.listSnapshots(table).isEmpty()) {
                return false;
            }
            for (ShardStatus shard : store.admin().get().describeShards(table)) {
                if (shard.epoch() > 0 && !range.contains(shard.shard())) {
                    return false;
                }
            }
            store.dropTable(table);
            return true;
        } catch (RuntimeException e) {
            LOG.warn("Could not drop table {} after its failed restore", table, e);
            return false;
        }
    }

    /** What the manifests of a subtask's handles say. */
    public record Manifests(
            List<StateMetaInfoSnapshot> metaInfo, Map<Integer, ShardSnapshotRef> refs) {}
}
