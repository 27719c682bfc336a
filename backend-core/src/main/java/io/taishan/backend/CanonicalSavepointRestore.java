package io.taishan.backend;

import io.taishan.kv.client.ShardLease;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StateSerializerProvider;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.restore.FullSnapshotRestoreOperation;
import org.apache.flink.runtime.state.restore.KeyGroup;
import org.apache.flink.runtime.state.restore.KeyGroupEntry;
import org.apache.flink.runtime.state.restore.SavepointRestoreResult;
import org.apache.flink.runtime.state.restore.ThrowingIterator;
import org.apache.flink.util.FlinkRuntimeException;

/**
 * Loads a canonical savepoint, written by any backend (HashMap, RocksDB, Taishan), into the
 * subtask's shards through the write queue: the one restore that moves data. Entries are RocksDB's
 * bytes already; each gets its state's id in front. Priority-queue elements are keys with an empty
 * value.
 */
final class CanonicalSavepointRestore {
    private static final byte[] EMPTY = {};

    private CanonicalSavepointRestore() {}

    /** Writes every entry of the owned key groups and returns the state meta info found. */
    static <K> List<StateMetaInfoSnapshot> restore(
            Collection<KeyedStateHandle> handles,
            KeyGroupRange keyGroupRange,
            ClassLoader userCodeClassLoader,
            StateSerializerProvider<K> keySerializerProvider,
            WriteBatchQueue writes,
            ShardLease[] leases,
            boolean heapTimers)
            throws Exception {
        Map<String, StateMetaInfoSnapshot> metaInfo = new LinkedHashMap<>();
        Map<Integer, String> namesById = new HashMap<>();
        ThrowingIterator<SavepointRestoreResult> results =
                new FullSnapshotRestoreOperation<>(
                                keyGroupRange, userCodeClassLoader, handles, keySerializerProvider)
                        .restore();
        while (results.hasNext()) {
            SavepointRestoreResult result = results.next();
            List<StateMetaInfoSnapshot> states = result.getStateMetaInfoSnapshots();
            byte[][] stateIds = new byte[states.size()][];
            boolean[] isQueue = new boolean[states.size()];
            for (int i = 0; i < states.size(); i++) {
                StateMetaInfoSnapshot state = states.get(i);
                isQueue[i] =
                        state.getBackendStateType()
                                == StateMetaInfoSnapshot.BackendStateType.PRIORITY_QUEUE;
                if (isQueue[i] && heapTimers) {
                    throw new UnsupportedOperationException(
                            "Restoring timers from a canonical savepoint with"
                                    + " taishan.timer-service: HEAP is not implemented; use"
                                    + " REMOTE timers.");
                }
                int stateId = StateKeys.stateId(state.getName());
                String holder = namesById.putIfAbsent(stateId, state.getName());
                if (holder != null && !holder.equals(state.getName())) {
                    throw new FlinkRuntimeException(
                            "The state names '"
                                    + holder
                                    + "' and '"
                                    + state.getName()
                                    + "' map to the same Taishan state id "
                                    + stateId);
                }
                stateIds[i] = StateKeys.stateIdBytes(stateId);
                metaInfo.putIfAbsent(state.getName(), state);
            }
            try (ThrowingIterator<KeyGroup> keyGroups = result.getRestoredKeyGroups()) {
                while (keyGroups.hasNext()) {
                    KeyGroup keyGroup = keyGroups.next();
                    ShardLease lease =
                            leases[keyGroup.getKeyGroupId() - keyGroupRange.getStartKeyGroup()];
                    try (ThrowingIterator<KeyGroupEntry> entries = keyGroup.getKeyGroupEntries()) {
                        while (entries.hasNext()) {
                            KeyGroupEntry entry = entries.next();
                            int state = entry.getKvStateId();
                            writes.put(
                                    lease,
                                    StateKeys.storeKey(stateIds[state], entry.getKey()),
                                    isQueue[state] ? EMPTY : entry.getValue());
                        }
                    }
                }
            }
        }
        writes.flushAndWait();
        return new ArrayList<>(metaInfo.values());
    }
}
