package io.taishan.backend;

import io.taishan.kv.client.CloseableIterator;
import io.taishan.kv.client.KvEntry;
import io.taishan.kv.client.KvStore;
import io.taishan.kv.client.ScanRange;
import io.taishan.kv.client.ShardLease;
import java.util.Arrays;
import java.util.List;
import javax.annotation.Nullable;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.FullSnapshotResources;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyValueStateIterator;
import org.apache.flink.runtime.state.StreamCompressionDecorator;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

/**
 * A canonical savepoint of the Taishan keyed backend: every entry of every state, key group by key
 * group, in RocksDB's bytes (the store key without its 4-byte state id), which Flink's {@code
 * FullSnapshotAsyncWriter} writes in the format every backend reads.
 *
 * <p>The shards are scanned live, so the savepoint runs synchronously on the task thread (no write
 * can slip in), after every pending write was flushed.
 */
final class TaishanFullSnapshotResources<K> implements FullSnapshotResources<K> {
    private static final int PAGE_SIZE = 1024;

    private final KvStore store;
    private final List<ShardLease> leases;
    private final List<StateMetaInfoSnapshot> metaInfo;
    private final int[] stateIds;
    private final int keyGroupPrefixBytes;
    private final KeyGroupRange keyGroupRange;
    private final TypeSerializer<K> keySerializer;
    private final StreamCompressionDecorator compression;

    TaishanFullSnapshotResources(
            KvStore store,
            List<ShardLease> leases,
            List<StateMetaInfoSnapshot> metaInfo,
            int[] stateIds,
            int keyGroupPrefixBytes,
            KeyGroupRange keyGroupRange,
            TypeSerializer<K> keySerializer,
            StreamCompressionDecorator compression) {
        this.store = store;
        this.leases = leases;
        this.metaInfo = metaInfo;
        this.stateIds = stateIds;
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

    /** Key group by key group (the leases are in key-group order), state by state. */
    private final class ShardsIterator implements KeyValueStateIterator {
        private int leaseIndex;
        private int stateIndex = -1;
        @Nullable private CloseableIterator<KvEntry> cursor;
        @Nullable private KvEntry current;
        private int previousKeyGroup = -1;
        private int previousState = -1;
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
            current = null;
            while (true) {
                if (cursor != null && cursor.hasNext()) {
                    current = cursor.next();
                    int keyGroup = leases.get(leaseIndex).shard();
                    newKeyGroup = keyGroup != previousKeyGroup;
                    newState = newKeyGroup || stateIndex != previousState;
                    previousKeyGroup = keyGroup;
                    previousState = stateIndex;
                    return;
                }
                if (cursor != null) {
                    cursor.close();
                    cursor = null;
                }
                if (++stateIndex >= stateIds.length) {
                    stateIndex = 0;
                    leaseIndex++;
                }
                if (leaseIndex >= leases.size() || stateIds.length == 0) {
                    return;
                }
                ShardLease lease = leases.get(leaseIndex);
                byte[] prefix =
                        StateKeys.keyGroupPrefix(
                                StateKeys.stateIdBytes(stateIds[stateIndex]),
                                lease.shard(),
                                keyGroupPrefixBytes);
                cursor =
                        Uninterruptibly.iterate(
                                () ->
                                        store.scan(
                                                lease, ScanRange.prefix(prefix), PAGE_SIZE, false));
            }
        }

        @Override
        public int keyGroup() {
            return leases.get(leaseIndex).shard();
        }

        @Override
        public byte[] key() {
            byte[] storeKey = current.key();
            return Arrays.copyOfRange(storeKey, StateKeys.STATE_ID_BYTES, storeKey.length);
        }

        @Override
        public byte[] value() {
            return current.value();
        }

        @Override
        public int kvStateId() {
            return stateIndex;
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
            return current != null;
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
