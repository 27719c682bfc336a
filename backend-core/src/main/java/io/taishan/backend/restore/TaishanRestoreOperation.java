package io.taishan.backend.restore;

import io.taishan.kv.client.DurableCut;
import io.taishan.kv.client.DurableRestore;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardRestore;
import io.taishan.kv.client.ShardStatus;
import io.taishan.snapshot.DurableCheckpointHandles;
import io.taishan.snapshot.ShardSnapshotRef;
import io.taishan.snapshot.TaishanManifest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
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
 *
 * <p>A durable checkpoint's handles ({@link IncrementalRemoteKeyedStateHandle}, manifest version 3)
 * also name, per key group, the cut in checkpoint storage holding its snapshot: the restore passes
 * those cuts along ({@link KvStore.Durable#restoreShards}), so a node that lost its disk, or holds
 * a shard that moved to it, downloads them; a node that has the snapshot downloads nothing. After a
 * rescale the cuts come from several handles, every subtask's that wrote one of the owned key
 * groups. Manifests inside a {@link KeyGroupsStateHandle} (checkpoints that are not durable)
 * restore from the nodes' snapshots alone, as always.
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

    /**
     * Reads the manifests: the state meta info, the snapshot of each owned key group, and for a
     * durable checkpoint the cut holding it.
     */
    public Manifests readManifests() throws Exception {
        Map<String, StateMetaInfoSnapshot> metaInfo = new LinkedHashMap<>();
        Map<Integer, ShardSnapshotRef> refs = new HashMap<>();
        Map<Integer, String> cutIds = new HashMap<>();
        Map<String, DurableCut> cuts = new LinkedHashMap<>();
        Set<Long> durableCheckpoints = new HashSet<>();
        Set<String> durableCopies = new HashSet<>();
        boolean keySerializerChecked = false;
        for (KeyedStateHandle handle : handles) {
            if (handle == null) {
                continue;
            }
            if (handle instanceof SavepointKeyedStateHandle) {
                throw new IllegalStateException(
                        "A canonical savepoint mixed with Taishan checkpoints: " + handle);
            }
            TaishanManifest.Contents<K> contents;
            if (handle instanceof KeyGroupsStateHandle keyGroups) {
                KeyGroupsStateHandle mine = keyGroups.getIntersection(keyGroupRange);
                if (mine == null) {
                    continue;
                }
                contents = TaishanManifest.read(mine, userCodeClassLoader, cancelStreamRegistry);
            } else if (handle instanceof IncrementalRemoteKeyedStateHandle durable) {
                // Flink hands the whole handle to every subtask whose range it touches.
                if (durable.getIntersection(keyGroupRange) == null) {
                    continue;
                }
                contents =
                        TaishanManifest.read(
                                durable, keyGroupRange, userCodeClassLoader, cancelStreamRegistry);
                durableCheckpoints.add(durable.getCheckpointId());
                durableCopies.addAll(DurableCheckpointHandles.dataFileCopies(durable));
            } else {
                throw new IllegalStateException(
                        "Unexpected state handle type, expected a "
                                + KeyGroupsStateHandle.class
                                + " or "
                                + IncrementalRemoteKeyedStateHandle.class
                                + " holding a Taishan manifest, but found "
                                + handle.getClass()
                                + ". It was written by another state backend.");
            }
            if (!keySerializerChecked) {
                checkKeySerializer(contents);
                keySerializerChecked = true;
            }
            for (StateMetaInfoSnapshot state : contents.metaInfo().getStateMetaInfoSnapshots()) {
                metaInfo.putIfAbsent(state.getName(), state);
            }
            refs.putAll(contents.refs());
            cutIds.putAll(contents.durableCutIds());
            // Another subtask's handle may name the same cut (a store cut once, copied by
            // each): either copy holds it.
            contents.durableCuts().forEach(cuts::putIfAbsent);
        }
        RestoredCopies restoredCopies =
                durableCheckpoints.size() == 1
                        ? new RestoredCopies(durableCheckpoints.iterator().next(), durableCopies)
                        : null;
        return new Manifests(
                new ArrayList<>(metaInfo.values()), refs, cutIds, cuts, restoredCopies);
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
     * group, and fills {@code unrestored} with the key groups started empty. Key groups of a
     * durable checkpoint name their cuts, which a node lacking the snapshot downloads.
     *
     * <p>In a table that existed before, the unpinned snapshots of a restored shard newer than the
     * one restored (all of them, for a clone or a shard started empty) are dropped by the server:
     * they belong to a lost future of this table (attempts after the restored checkpoint, or an
     * earlier run under the same JobID).
     */
    public static TakenShards takeShards(
            KvStore store,
            String table,
            String writer,
            boolean newTable,
            KeyGroupRange range,
            Manifests manifests,
            List<Integer> unrestored) {
        ShardLease[] leases = new ShardLease[range.getNumberOfKeyGroups()];
        List<ShardRestore> restores = new ArrayList<>();
        Map<String, DurableCut> named = new LinkedHashMap<>();
        for (int keyGroup : range) {
            ShardSnapshotRef ref = manifests.refs().get(keyGroup);
            if (ref == null) {
                unrestored.add(keyGroup);
                continue;
            }
            String cutId = manifests.durableCutIds().get(keyGroup);
            restores.add(new ShardRestore(keyGroup, ref.table(), ref.snapshotId(), cutId));
            if (cutId != null) {
                named.put(cutId, manifests.durableCuts().get(cutId));
            }
        }
        long downloadedBytes = 0;
        if (!restores.isEmpty()) {
            List<ShardLease> restored;
            if (!named.isEmpty() && store.durable().isPresent()) {
                DurableRestore durable =
                        store.durable()
                                .get()
                                .restoreShards(
                                        table, writer, restores, new ArrayList<>(named.values()));
                restored = durable.leases();
                downloadedBytes = durable.downloadedBytes();
            } else {
                // Without the facet (a store that cannot reach checkpoint storage), the nodes'
                // own snapshots must do; a restore that needs a copy fails naming the snapshot.
                restored = store.restoreShards(table, writer, withoutCuts(restores));
            }
            for (ShardLease lease : restored) {
                leases[lease.shard() - range.getStartKeyGroup()] = lease;
            }
        }
        if (!unrestored.isEmpty()) {
            int[] shards = unrestored.stream().mapToInt(Integer::intValue).toArray();
            for (ShardLease lease : store.openShards(table, shards, writer, !newTable)) {
                leases[lease.shard() - range.getStartKeyGroup()] = lease;
            }
        }
        return new TakenShards(leases, downloadedBytes);
    }

    private static List<ShardRestore> withoutCuts(List<ShardRestore> restores) {
        List<ShardRestore> local = new ArrayList<>(restores.size());
        for (ShardRestore restore : restores) {
            local.add(
                    new ShardRestore(restore.shard(), restore.sourceTable(), restore.snapshotId()));
        }
        return local;
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

    /**
     * What the manifests of a subtask's handles say.
     *
     * @param durableCutIds the cut in checkpoint storage holding each owned key group's snapshot,
     *     for those restored from a durable checkpoint
     * @param durableCuts those cuts by id
     * @param restoredCopies the data files' copies of the durable checkpoint restored, which the
     *     next checkpoint may reuse; null when not restored from exactly one durable checkpoint
     */
    public record Manifests(
            List<StateMetaInfoSnapshot> metaInfo,
            Map<Integer, ShardSnapshotRef> refs,
            Map<Integer, String> durableCutIds,
            Map<String, DurableCut> durableCuts,
            @Nullable RestoredCopies restoredCopies) {

        /** Nothing to restore from snapshots (a new job, or a canonical savepoint). */
        public static Manifests none() {
            return new Manifests(List.of(), Map.of(), Map.of(), Map.of(), null);
        }
    }

    /** The copies a restored durable checkpoint references. */
    public record RestoredCopies(long checkpointId, Set<String> paths) {}

    /**
     * The leases of the owned shards by key group, and the bytes the nodes downloaded from
     * checkpoint storage for them (0 when each held its snapshots).
     */
    public record TakenShards(ShardLease[] leases, long downloadedBytes) {}
}
