package io.taishan.backend.snapshot;

import io.taishan.backend.remote.Uninterruptibly;
import io.taishan.backend.state.StateKeys;
import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.protocol.ScanRange;
import java.io.IOException;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import javax.annotation.Nullable;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.FullSnapshotResources;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyValueStateIterator;
import org.apache.flink.runtime.state.StreamCompressionDecorator;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueStateSnapshot;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.util.FlinkRuntimeException;

/**
 * A canonical savepoint of the Taishan keyed backend: every entry of every state, key group by key
 * group, in RocksDB's bytes (the store key without its 4-byte state id), which Flink's {@code
 * FullSnapshotAsyncWriter} writes in the format every backend reads.
 *
 * <p>The shards are scanned live, so the savepoint runs synchronously on the task thread (no write
 * can slip in), after every pending write was flushed.
 *
 * <p>With HEAP timers the heap queues are written too, as RocksDB does: their meta info after the
 * stored states' (so their state ids follow), their elements as keys {@code [key group][element]}
 * with an empty value, in the same key group as the stored entries.
 */
public final class TaishanFullSnapshotResources<K> implements FullSnapshotResources<K> {
    private static final int PAGE_SIZE = 1024;
    private static final byte[] EMPTY = {};

    private final KvStore store;
    private final List<ShardLease> leases;
    private final List<StateMetaInfoSnapshot> metaInfo;
    private final int[] stateIds;
    private final List<HeapPriorityQueueStateSnapshot<?>> heapQueues;
    private final int keyGroupPrefixBytes;
    private final KeyGroupRange keyGroupRange;
    private final TypeSerializer<K> keySerializer;
    private final StreamCompressionDecorator compression;

    public TaishanFullSnapshotResources(
            KvStore store,
            List<ShardLease> leases,
            List<StateMetaInfoSnapshot> metaInfo,
            int[] stateIds,
            List<HeapPriorityQueueStateSnapshot<?>> heapQueues,
            int keyGroupPrefixBytes,
            KeyGroupRange keyGroupRange,
            TypeSerializer<K> keySerializer,
            StreamCompressionDecorator compression) {
        this.store = store;
        this.leases = leases;
        this.metaInfo = metaInfo;
        this.stateIds = stateIds;
        this.heapQueues = heapQueues;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.keyGroupRange = keyGroupRange;
        this.keySerializer = keySerializer;
        this.compression = compression;
    }

    @Override
    public List<StateMetaInfoSnapshot> getMetaInfoSnapshots() {
        return metaInfo;
    }

    @Override
    public KeyValueStateIterator createKVStateIterator() {
        return new ShardsIterator();
    }

    @Override
    public KeyGroupRange getKeyGroupRange() {
        return keyGroupRange;
    }

    @Override
    public TypeSerializer<K> getKeySerializer() {
        return keySerializer;
    }

    @Override
    public StreamCompressionDecorator getStreamCompressionDecorator() {
        return compression;
    }

    @Override
    public void release() {}

    /**
     * Key group by key group (the leases are in key-group order); within one, the stored states,
     * then the heap queues, in the order of their state ids.
     */
    private final class ShardsIterator implements KeyValueStateIterator {
        private final int sourceCount = stateIds.length + heapQueues.size();
        private final DataOutputSerializer elementKey = new DataOutputSerializer(64);
        private int leaseIndex;
        private int sourceIndex = -1;
        @Nullable private CloseableIterator<KvEntry> cursor;
        @Nullable private Iterator<?> elements;
        @Nullable private byte[] currentKey;
        @Nullable private byte[] currentValue;
        private int previousKeyGroup = -1;
        private int previousSource = -1;
        private boolean newKeyGroup;
        private boolean newState;

        ShardsIterator() {
            advance();
        }

        @Override
        public void next() {
            advance();
        }

        private void advance() {
            currentKey = null;
            while (true) {
                if (cursor != null && cursor.hasNext()) {
                    KvEntry entry = cursor.next();
                    byte[] storeKey = entry.key();
                    found(
                            Arrays.copyOfRange(storeKey, StateKeys.STATE_ID_BYTES, storeKey.length),
                            entry.value());
                    return;
                }
                if (elements != null && elements.hasNext()) {
                    found(serializeElement(elements.next()), EMPTY);
                    return;
                }
                if (cursor != null) {
                    cursor.close();
                    cursor = null;
                }
                elements = null;
                if (++sourceIndex >= sourceCount) {
                    sourceIndex = 0;
                    leaseIndex++;
                }
                if (leaseIndex >= leases.size() || sourceCount == 0) {
                    return;
                }
                open(leases.get(leaseIndex), sourceIndex);
            }
        }

        private void open(ShardLease lease, int source) {
            if (source >= stateIds.length) {
                elements =
                        heapQueues
                                .get(source - stateIds.length)
                                .getIteratorForKeyGroup(lease.shard());
                return;
            }
            byte[] prefix =
                    StateKeys.keyGroupPrefix(
                            StateKeys.stateIdBytes(stateIds[source]),
                            lease.shard(),
                            keyGroupPrefixBytes);
            cursor =
                    Uninterruptibly.iterate(
                            () -> store.scan(lease, ScanRange.prefix(prefix), PAGE_SIZE, false));
        }

        @SuppressWarnings("unchecked")
        private byte[] serializeElement(Object element) {
            TypeSerializer<Object> serializer =
                    (TypeSerializer<Object>)
                            heapQueues
                                    .get(sourceIndex - stateIds.length)
                                    .getMetaInfo()
                                    .getElementSerializer();
            try {
                elementKey.clear();
                CompositeKeySerializationUtils.writeKeyGroup(
                        keyGroup(), keyGroupPrefixBytes, elementKey);
                serializer.serialize(element, elementKey);
                return elementKey.getCopyOfBuffer();
            } catch (IOException e) {
                throw new FlinkRuntimeException("Cannot serialize a timer", e);
            }
        }

        private void found(byte[] key, byte[] value) {
            currentKey = key;
            currentValue = value;
            int keyGroup = keyGroup();
            newKeyGroup = keyGroup != previousKeyGroup;
            newState = newKeyGroup || sourceIndex != previousSource;
            previousKeyGroup = keyGroup;
            previousSource = sourceIndex;
        }

        @Override
        public int keyGroup() {
            return leases.get(leaseIndex).shard();
        }

        @Override
        public byte[] key() {
            return currentKey;
        }

        @Override
        public byte[] value() {
            return currentValue;
        }

        @Override
        public int kvStateId() {
            return sourceIndex;
        }

        @Override
        public boolean isNewKeyValueState() {
            return newState;
        }

        @Override
        public boolean isNewKeyGroup() {
            return newKeyGroup;
        }

        @Override
        public boolean isValid() {
            return currentKey != null;
        }

        @Override
        public void close() {
            if (cursor != null) {
                cursor.close();
                cursor = null;
            }
        }
    }
}
