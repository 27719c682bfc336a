package io.taishan.backend.timers;

import io.taishan.backend.read.StateReader;
import io.taishan.backend.state.RegisteredStates;
import io.taishan.backend.state.StateKeys;
import io.taishan.backend.write.StateWriter;
import io.taishan.kv.client.ShardLease;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;
import javax.annotation.Nonnull;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.runtime.state.KeyExtractorFunction;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupedInternalPriorityQueue;
import org.apache.flink.runtime.state.Keyed;
import org.apache.flink.runtime.state.PriorityComparable;
import org.apache.flink.runtime.state.PriorityComparator;
import org.apache.flink.runtime.state.RegisteredPriorityQueueStateBackendMetaInfo;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueElement;
import org.apache.flink.runtime.state.heap.KeyGroupPartitionedPriorityQueue;
import org.apache.flink.util.FlinkRuntimeException;
import org.apache.flink.util.StateMigrationException;

/**
 * Timers in the store (the REMOTE timer service), as Flink's RocksDB backend keeps them: a {@link
 * KeyGroupPartitionedPriorityQueue} over one {@link TaishanCachingPriorityQueueSet} per key group,
 * registered as priority-queue meta info so that they are in every shard snapshot.
 */
public final class TaishanPriorityQueueFactory {
    private final RegisteredStates registered;
    private final StateReader reader;
    private final StateWriter writer;
    private final IntFunction<ShardLease> leaseOfKeyGroup;
    private final KeyGroupRange keyGroupRange;
    private final int numberOfKeyGroups;
    private final int keyGroupPrefixBytes;
    private final int cacheSize;
    private final IntPredicate startedEmpty;

    /**
     * The queues made so far: a second queue of one state (Flink makes one per name) may find
     * elements the first one wrote, even in a shard that started empty.
     */
    private final Set<String> created = new HashSet<>();

    public TaishanPriorityQueueFactory(
            RegisteredStates registered,
            StateReader reader,
            StateWriter writer,
            IntFunction<ShardLease> leaseOfKeyGroup,
            KeyGroupRange keyGroupRange,
            int numberOfKeyGroups,
            int keyGroupPrefixBytes,
            int cacheSize,
            IntPredicate startedEmpty) {
        this.registered = registered;
        this.reader = reader;
        this.writer = writer;
        this.leaseOfKeyGroup = leaseOfKeyGroup;
        this.keyGroupRange = keyGroupRange;
        this.numberOfKeyGroups = numberOfKeyGroups;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.cacheSize = cacheSize;
        this.startedEmpty = startedEmpty;
    }

    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    String stateName,
                    TypeSerializer<T> byteOrderedElementSerializer,
                    boolean allowFutureMetadataUpdates) {
        int stateId = register(stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
        byte[] stateIdBytes = StateKeys.stateIdBytes(stateId);
        boolean first = created.add(stateName);
        // Flink's queue peeks every key group's set as it is built: the sets of shards that
        // started empty need no read, the others get their first page in one call per node.
        Map<Integer, TaishanCachingPriorityQueueSet<T>> sets = new HashMap<>();
        List<TaishanCachingPriorityQueueSet<T>> toRead = new ArrayList<>();
        for (int keyGroup : keyGroupRange) {
            TaishanCachingPriorityQueueSet<T> set =
                    new TaishanCachingPriorityQueueSet<>(
                            reader,
                            writer,
                            leaseOfKeyGroup.apply(keyGroup),
                            stateIdBytes,
                            keyGroupPrefixBytes,
                            byteOrderedElementSerializer,
                            cacheSize);
            if (first && startedEmpty.test(keyGroup)) {
                set.startEmpty();
            } else {
                toRead.add(set);
            }
            sets.put(keyGroup, set);
        }
        prefill(toRead);
        return new KeyGroupPartitionedPriorityQueue<>(
                KeyExtractorFunction.forKeyedObjects(),
                PriorityComparator.forPriorityComparableObjects(),
                new KeyGroupPartitionedPriorityQueue.PartitionQueueSetFactory<
                        T, TaishanCachingPriorityQueueSet<T>>() {
                    @Nonnull
                    @Override
                    public TaishanCachingPriorityQueueSet<T> create(
                            int keyGroupId,
                            int numKeyGroups,
                            @Nonnull KeyExtractorFunction<T> keyExtractor,
                            @Nonnull PriorityComparator<T> elementPriorityComparator) {
                        return sets.get(keyGroupId);
                    }
                },
                keyGroupRange,
                numberOfKeyGroups);
    }

    /** Reads the first page of each set's keys, in one call per node (see the read path). */
    private <T extends HeapPriorityQueueElement> void prefill(
            List<TaishanCachingPriorityQueueSet<T>> sets) {
        if (sets.isEmpty()) {
            return;
        }
        List<ShardLease> leases = new ArrayList<>(sets.size());
        List<byte[]> starts = new ArrayList<>(sets.size());
        List<byte[]> ends = new ArrayList<>(sets.size());
        for (TaishanCachingPriorityQueueSet<T> set : sets) {
            leases.add(set.lease());
            starts.add(set.rangeStart());
            ends.add(set.rangeEnd());
        }
        List<StateReader.MergedPage> pages =
                reader.firstKeyPages(leases, starts, ends, cacheSize + 1);
        for (int i = 0; i < sets.size(); i++) {
            StateReader.MergedPage page = pages.get(i);
            if (page != null) {
                sets.get(i).prefill(page);
            }
        }
    }

    /**
     * Registers priority-queue meta info as RocksDB does: elements are stored as keys, so they
     * cannot be migrated, and only an incompatible serializer is rejected.
     */
    private <T> int register(
            String stateName, TypeSerializer<T> serializer, boolean allowFutureMetadataUpdates) {
        RegisteredStates.Info info = registered.get(stateName);
        if (info != null
                && !(info.metaInfo() instanceof RegisteredPriorityQueueStateBackendMetaInfo)) {
            throw new IllegalStateException(
                    "State name '" + stateName + "' is already used by a keyed state.");
        }
        if (info != null) {
            @SuppressWarnings("unchecked")
            RegisteredPriorityQueueStateBackendMetaInfo<T> existing =
                    (RegisteredPriorityQueueStateBackendMetaInfo<T>) info.metaInfo();
            if (existing.getPreviousElementSerializer() == serializer) {
                return info.stateId();
            }
            TypeSerializerSchemaCompatibility<T> compatibility =
                    existing.updateElementSerializer(serializer);
            if (compatibility.isIncompatible()) {
                throw new FlinkRuntimeException(
                        new StateMigrationException(
                                "The new priority queue serializer must not be incompatible."));
            }
        }
        RegisteredPriorityQueueStateBackendMetaInfo<T> metaInfo =
                new RegisteredPriorityQueueStateBackendMetaInfo<>(stateName, serializer);
        if (allowFutureMetadataUpdates) {
            metaInfo = metaInfo.withSerializerUpgradesAllowed();
        }
        return registered.register(metaInfo).stateId();
    }
}
