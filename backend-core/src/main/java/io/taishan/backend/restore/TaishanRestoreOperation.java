package io.taishan.backend.restore;

import io.taishan.kv.client.GrpcKvStore;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.client.ShardStatus;
import io.taishan.kv.client.SnapshotInfo;
import io.taishan.kv.client.TableNotFoundException;
import io.taishan.snapshot.ShardSnapshotRef;
import io.taishan.snapshot.TaishanManifest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.annotation.Nullable;
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
 * whatever the state size. A key group whose snapshot is in this job's table is rolled back to it
 * (failover, rescale within the job); one in another table (a retained checkpoint or native
 * savepoint of another job) is cloned into this job's table. Every other owned shard is opened and,
 * unless the table is new, wiped: it may hold writes of an earlier attempt. Every shard gets a new
 * epoch, which fences any zombie attempt.
 */
public final class TaishanRestoreOperation<K> {
    private static final Logger LOG = LoggerFactory.getLogger(TaishanRestoreOperation.class);
    private static final int PARALLEL_SHARD_CALLS = 8;

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
     * Takes every owned shard of {@code table}: restored or cloned from its snapshot, or opened.
     * Returns the leases by key group, and the key groups to wipe.
     *
     * <p>In a table that existed before, the unpinned snapshots of an owned shard newer than the
     * one restored (or all of them, when the shard is not rolled back to one of its own) are
     * dropped: they belong to a lost future of this table (attempts after the restored checkpoint,
     * or an earlier run under the same JobID), and the store keeps the first snapshot of an id, so
     * a later checkpoint with the same id would silently reference them.
     */
    public static ShardLease[] takeShards(
            KvStore store,
            String table,
            boolean newTable,
            KeyGroupRange range,
            Map<Integer, ShardSnapshotRef> refs,
            List<Integer> unrestored)
            throws Exception {
        ShardLease[] leases = new ShardLease[range.getNumberOfKeyGroups()];
        // Each shard costs a few round trips and an fsync on the server; a subtask owning many
        // key groups (low parallelism) would otherwise restore for seconds, one shard at a time.
        int threads = Math.min(PARALLEL_SHARD_CALLS, leases.length);
        ExecutorService executor =
                Executors.newFixedThreadPool(
                        Math.max(1, threads),
                        runnable -> {
                            Thread thread = new Thread(runnable, "taishan-restore-" + table);
                            thread.setDaemon(true);
                            return thread;
                        });
        try {
            List<CompletableFuture<Void>> calls = new ArrayList<>(leases.length);
            for (int keyGroup : range) {
                ShardSnapshotRef ref = refs.get(keyGroup);
                if (ref == null) {
                    unrestored.add(keyGroup);
                }
                calls.add(
                        CompletableFuture.runAsync(
                                () ->
                                        leases[keyGroup - range.getStartKeyGroup()] =
                                                takeShard(store, table, newTable, keyGroup, ref),
                                executor));
            }
            try {
                CompletableFuture.allOf(calls.toArray(new CompletableFuture[0])).get();
            } catch (ExecutionException e) {
                throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
            }
        } finally {
            executor.shutdownNow();
        }
        return leases;
    }

    private static ShardLease takeShard(
            KvStore store,
            String table,
            boolean newTable,
            int keyGroup,
            @Nullable ShardSnapshotRef ref) {
        ShardLease lease;
        if (ref == null) {
            lease = store.openShard(table, keyGroup);
        } else if (ref.table().equals(table)) {
            lease = store.restore(table, keyGroup, ref.snapshotId());
        } else {
            lease = store.cloneShard(ref.table(), keyGroup, ref.snapshotId(), table);
        }
        if (!newTable) {
            long keepUpTo =
                    ref != null && ref.table().equals(table) ? ref.snapshotId() : Long.MIN_VALUE;
            dropSnapshotsAbove(store, table, keyGroup, keepUpTo);
        }
        return lease;
    }

    private static void dropSnapshotsAbove(KvStore store, String table, int shard, long keepUpTo) {
        for (SnapshotInfo snapshot : store.listSnapshots(table, shard)) {
            if (!snapshot.pinned() && snapshot.snapshotId() > keepUpTo) {
                store.dropSnapshot(table, shard, snapshot.snapshotId());
            }
        }
    }

    /**
     * Fails, naming them, when snapshots the manifests reference are gone from the store (dropped
     * by hand, by a garbage collection, or with their table): checked before this job's table is
     * created, so a restore that cannot succeed leaves nothing behind. One listing per source
     * table.
     */
    public static void checkSnapshotsExist(KvStore store, Map<Integer, ShardSnapshotRef> refs) {
        Map<String, List<ShardSnapshotRef>> byTable = new TreeMap<>();
        for (ShardSnapshotRef ref : refs.values()) {
            byTable.computeIfAbsent(ref.table(), t -> new ArrayList<>()).add(ref);
        }
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, List<ShardSnapshotRef>> table : byTable.entrySet()) {
            Set<String> present = new HashSet<>();
            try {
                for (SnapshotInfo info : store.listSnapshots(table.getKey())) {
                    present.add(info.shard() + "/" + info.snapshotId());
                }
            } catch (TableNotFoundException e) {
                missing.add("table " + table.getKey() + " (dropped)");
                continue;
            }
            List<ShardSnapshotRef> refsOfTable = new ArrayList<>(table.getValue());
            refsOfTable.sort(Comparator.comparingInt(ShardSnapshotRef::shard));
            for (ShardSnapshotRef ref : refsOfTable) {
                if (!present.contains(ref.shard() + "/" + ref.snapshotId())) {
                    missing.add(
                            "snapshot "
                                    + ref.snapshotId()
                                    + " of table "
                                    + ref.table()
                                    + " shard "
                                    + ref.shard());
                }
            }
        }
        if (!missing.isEmpty()) {
            int shown = Math.min(missing.size(), 10);
            throw new IllegalStateException(
                    "The checkpoint or savepoint to restore references "
                            + missing.size()
                            + " shard snapshot(s) the kv-server does not have: "
                            + String.join(", ", missing.subList(0, shown))
                            + (shown < missing.size() ? ", ..." : "")
                            + ". They were dropped (by hand, by a garbage collection that did not"
                            + " keep this checkpoint, or with their table); restore from a"
                            + " checkpoint or savepoint whose snapshots still exist.");
        }
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
    public static boolean dropIfUnused(GrpcKvStore store, String table, KeyGroupRange range) {
        try {
            if (!store.listSnapshots(table).isEmpty()) {
                return false;
            }
            for (ShardStatus shard : store.describeShards(table)) {
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
