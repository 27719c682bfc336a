package io.taishan.backend.timers;

import io.taishan.backend.read.StateReader;
import io.taishan.backend.state.RegisteredStates;
import io.taishan.backend.state.StateKeys;
import io.taishan.backend.write.StateWriter;
import io.taishan.kv.client.ShardLease;
import java.util.function.IntFunction;
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

    public TaishanPriorityQueueFactory(
            RegisteredStates registered,
            StateReader reader,
            StateWriter writer,
            IntFunction<ShardLease> leaseOfKeyGroup,
            KeyGroupRange keyGroupRange,
            int numberOfKeyGroups,
            int keyGroupPrefixBytes,
            int cacheSize) {
        this.registered = registered;
        this.reader = reader;
        this.writer = writer;
        this.leaseOfKeyGroup = leaseOfKeyGroup;
        this.keyGroupRange = keyGroupRange;
        this.numberOfKeyGroups = numberOfKeyGroups;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.cacheSize = cacheSize;
    }

    public <T extends HeapPriorityQueueElement & PriorityComparable<? super T> & Keyed<?>>
            KeyGroupedInternalPriorityQueue<T> create(
                    String stateName,
                    TypeSerializer<T> byteOrderedElementSerializer,
                    boolean allowFutureMetadataUpdates) {
        int stateId = register(stateName, byteOrderedElementSerializer, allowFutureMetadataUpdates);
        byte[] stateIdBytes = StateKeys.stateIdBytes(stateId);
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
                        return new TaishanCachingPriorityQueueSet<>(
                                reader,
                                writer,
                                leaseOfKeyGroup.apply(keyGroupId),
                                stateIdBytes,
                                keyGroupPrefixBytes,
                                byteOrderedElementSerializer,
                                cacheSize);
                    }
                },
                keyGroupRange,
                numberOfKeyGroups);
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
