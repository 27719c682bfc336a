package io.taishan.backend.iterator;

import io.taishan.backend.read.StateReader;
import io.taishan.backend.state.RegisteredStates;
import io.taishan.backend.state.StateKeys;
import io.taishan.kv.client.ShardLease;
import io.taishan.kv.protocol.ScanRange;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.util.FlinkRuntimeException;

/**
 * The key iteration of a keyed backend ({@code getKeys}, {@code getKeysAndNamespaces}, {@code
 * numKeyValueStateEntries}), over keys-only scans of {@code [state id][key group]} of every owned
 * shard, with the pending writes merged in.
 */
public final class StateKeyStreams<K> {
    private static final int COUNT_PAGE_SIZE = 4096;

    private final RegisteredStates registered;
    private final StateReader reader;
    private final TypeSerializer<K> keySerializer;
    private final int keyGroupPrefixBytes;
    private final List<ShardLease> leases;

    public StateKeyStreams(
            RegisteredStates registered,
            StateReader reader,
            TypeSerializer<K> keySerializer,
            int keyGroupPrefixBytes,
            List<ShardLease> leases) {
        this.registered = registered;
        this.reader = reader;
        this.keySerializer = keySerializer;
        this.keyGroupPrefixBytes = keyGroupPrefixBytes;
        this.leases = leases;
    }

    public <N> Stream<K> keys(List<String> stateNames, N namespace) {
        List<StateKeysIterator.Source> sources = new ArrayList<>();
        byte[] namespaceBytes = null;
        for (String name : stateNames) {
            RegisteredStates.Info info = registered.get(name);
            if (info == null || !info.isKeyValue()) {
                continue;
            }
            TypeSerializer<N> namespaceSerializer = namespaceSerializer(info);
            boolean ambiguous =
                    CompositeKeySerializationUtils.isAmbiguousKeyPossible(
                            keySerializer, namespaceSerializer);
            byte[] bytes;
            try {
                DataOutputSerializer out = new DataOutputSerializer(16);
                CompositeKeySerializationUtils.writeNameSpace(
                        namespace, namespaceSerializer, out, ambiguous);
                bytes = out.getCopyOfBuffer();
            } catch (Exception e) {
                throw new FlinkRuntimeException("Failed to serialize the namespace", e);
            }
            if (namespaceBytes == null) {
                namespaceBytes = bytes;
            } else if (!Arrays.equals(namespaceBytes, bytes)) {
                throw new FlinkRuntimeException(
                        "Key namespaces are different for states ["
                                + String.join(",", stateNames)
                                + "]");
            }
            sources.add(new StateKeysIterator.Source(info.stateId(), ambiguous));
        }
        if (sources.isEmpty()) {
            return Stream.empty();
        }
        byte[] expectedNamespace = namespaceBytes;
        return toStream(
                new StateKeysIterator<K, K>(
                        reader,
                        keySerializer,
                        keyGroupPrefixBytes,
                        leases,
                        sources,
                        (key, in, storeKey, ambiguous) ->
                                matches(storeKey, in.getPosition(), expectedNamespace)
                                        ? key
                                        : null));
    }

    public <N> Stream<Tuple2<K, N>> keysAndNamespaces(String stateName) {
        RegisteredStates.Info info = registered.get(stateName);
        if (info == null || !info.isKeyValue()) {
            return Stream.empty();
        }
        TypeSerializer<N> namespaceSerializer = namespaceSerializer(info);
        boolean ambiguous =
                CompositeKeySerializationUtils.isAmbiguousKeyPossible(
                        keySerializer, namespaceSerializer);
        return toStream(
                new StateKeysIterator<K, Tuple2<K, N>>(
                        reader,
                        keySerializer,
                        keyGroupPrefixBytes,
                        leases,
                        List.of(new StateKeysIterator.Source(info.stateId(), ambiguous)),
                        (key, in, storeKey, isAmbiguous) ->
                                Tuple2.of(
                                        key,
                                        CompositeKeySerializationUtils.readNamespace(
                                                namespaceSerializer, in, isAmbiguous))));
    }

    /** Every stored entry of every registered state, timers included. */
    public int countEntries() {
        int count = 0;
        for (RegisteredStates.Info info : registered.all()) {
            byte[] stateIdBytes = StateKeys.stateIdBytes(info.stateId());
            for (ShardLease lease : leases) {
                byte[] prefix =
                        StateKeys.keyGroupPrefix(stateIdBytes, lease.shard(), keyGroupPrefixBytes);
                byte[] end = ScanRange.prefixSuccessor(prefix);
                byte[] start = prefix;
                while (start != null) {
                    StateReader.MergedPage page =
                            reader.scanPage(lease, start, end, COUNT_PAGE_SIZE, true);
                    count += page.entries().size();
                    start = page.next();
                }
            }
        }
        return count;
    }

    @SuppressWarnings("unchecked")
    private static <N> TypeSerializer<N> namespaceSerializer(RegisteredStates.Info info) {
        return ((RegisteredKeyValueStateBackendMetaInfo<N, ?>) info.metaInfo())
                .getNamespaceSerializer();
    }

    private static <T> Stream<T> toStream(StateKeysIterator<?, T> iterator) {
        return StreamSupport.stream(
                        Spliterators.spliteratorUnknownSize(iterator, Spliterator.ORDERED), false)
                .onClose(iterator::close);
    }

    private static boolean matches(byte[] key, int start, byte[] expected) {
        if (key.length < start + expected.length) {
            return false;
        }
        for (int i = 0; i < expected.length; i++) {
            if (key[start + i] != expected[i]) {
                return false;
            }
        }
        return true;
    }
}
