package io.taishan.backend.restore;

import io.taishan.backend.read.CachePolicy;
import io.taishan.backend.state.StateKeys;
import io.taishan.backend.write.StateWriter;
import io.taishan.kv.client.ShardLease;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.annotation.Nullable;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.HeapPriorityQueuesManager;
import org.apache.flink.runtime.state.KeyExtractorFunction;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.Keyed;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.PriorityComparable;
import org.apache.flink.runtime.state.RegisteredPriorityQueueStateBackendMetaInfo;
import org.apache.flink.runtime.state.StateSerializerProvider;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueElement;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSnapshotRestoreWrapper;
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
 * value; with HEAP timers they go to the heap queues instead, as in Flink's {@code
 * RocksDBHeapTimersFullRestoreOperation}.
 */
public final class CanonicalSavepointRestore {
    private static final byte[] EMPTY = {};

    private CanonicalSavepointRestore() {}

    /**
     * Writes every entry of the owned key groups and returns the meta info of the states now in the
     * store (with {@code heapTimers}, the queues are registered there and not returned).
     */
    public static <K> List<StateMetaInfoSnapshot> restore(
            Collection<KeyedStateHandle> handles,
            KeyGroupRange keyGroupRange,
            ClassLoader userCodeClassLoader,
            StateSerializerProvider<K> keySerializerProvider,
            StateWriter writer,
            ShardLease[] leases,
            @Nullable HeapTimers heapTimers)
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
            HeapPriorityQueueSnapshotRestoreWrapper<?>[] heapQueues =
                    new HeapPriorityQueueSnapshotRestoreWrapper<?>[states.size()];
            for (int i = 0; i < states.size(); i++) {
                StateMetaInfoSnapshot state = states.get(i);
                isQueue[i] =
                        state.getBackendStateType()
                                == StateMetaInfoSnapshot.BackendStateType.PRIORITY_QUEUE;
                if (isQueue[i] && heapTimers != null) {
                    heapQueues[i] = heapTimers.queueFor(state);
                    continue;
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
                            if (heapQueues[state] != null) {
                                heapTimers.add(heapQueues[state], entry.getKey());
                                continue;
                            }
                            byte[] key = StateKeys.storeKey(stateIds[state], entry.getKey());
                            if (isQueue[state]) {
                                writer.putUnread(lease, key, EMPTY);
                            } else {
                                // Through the Bloom filter, not the cache: nothing reads yet.
                                writer.put(lease, key, entry.getValue(), CachePolicy.UNCACHED, 0);
                            }
                        }
                    }
                }
            }
        }
        writer.queue().flushAndWait();
        return new ArrayList<>(metaInfo.values());
    }

    /** The heap timer queues of a backend with HEAP timers, filled from the savepoint. */
    public static final class HeapTimers {
        private final HeapPriorityQueuesManager manager;
        private final HeapPriorityQueueSetFactory factory;
        private final KeyGroupRange keyGroupRange;
        private final int numberOfKeyGroups;
        private final int keyGroupPrefixBytes;
        private final DataInputDeserializer elementBytes = new DataInputDeserializer();

        public HeapTimers(
                HeapPriorityQueuesManager manager,
                HeapPriorityQueueSetFactory factory,
                KeyGroupRange keyGroupRange,
                int numberOfKeyGroups) {
            this.manager = manager;
            this.factory = factory;
            this.keyGroupRange = keyGroupRange;
            this.numberOfKeyGroups = numberOfKeyGroups;
            this.keyGroupPrefixBytes =
                    CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(
                            numberOfKeyGroups);
        }

        /**
         * The queue of a restored PRIORITY_QUEUE state, created with the savepoint's serializer;
         * the operator's own serializer is checked against it when it asks for the queue.
         */
        HeapPriorityQueueSnapshotRestoreWrapper<?> queueFor(StateMetaInfoSnapshot state) {
            return manager.getRegisteredPQStates()
                    .computeIfAbsent(
                            state.getName(),
                            name ->
                                    create(
                                            new RegisteredPriorityQueueStateBackendMetaInfo<>(
                                                    state)));
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        private <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
                HeapPriorityQueueSnapshotRestoreWrapper<T> create(
                        RegisteredPriorityQueueStateBackendMetaInfo metaInfo) {
            return new HeapPriorityQueueSnapshotRestoreWrapper<>(
                    factory.create(metaInfo.getName(), metaInfo.getElementSerializer()),
                    metaInfo,
                    KeyExtractorFunction.forKeyedObjects(),
                    keyGroupRange,
                    numberOfKeyGroups);
        }

        /** Adds the element of a savepoint key, {@code [key group][element]}. */
        @SuppressWarnings("unchecked")
        void add(HeapPriorityQueueSnapshotRestoreWrapper<?> queue, byte[] key) throws IOException {
            HeapPriorityQueueSnapshotRestoreWrapper<HeapPriorityQueueElement> typed =
                    (HeapPriorityQueueSnapshotRestoreWrapper<HeapPriorityQueueElement>) queue;
            elementBytes.setBuffer(key);
            elementBytes.skipBytesToRead(keyGroupPrefixBytes);
            typed.getPriorityQueue()
                    .add(typed.getMetaInfo().getElementSerializer().deserialize(elementBytes));
        }
    }
}
