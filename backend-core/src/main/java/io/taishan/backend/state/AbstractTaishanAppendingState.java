package io.taishan.backend.state;

import java.io.IOException;
import javax.annotation.Nullable;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.internal.InternalAppendingState;

/** Reducing and aggregating states: one value per key and namespace, read-modify-write. */
abstract class AbstractTaishanAppendingState<K, N, IN, SV, OUT>
        extends AbstractTaishanState<K, N, SV>
        implements InternalAppendingState<K, N, IN, SV, OUT> {

    AbstractTaishanAppendingState(
            StateContext<K> context,
            int stateId,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<SV> valueSerializer,
            SV defaultValue) {
        super(context, stateId, namespaceSerializer, valueSerializer, defaultValue);
    }

    @Override
    public SV getInternal() throws IOException {
        return getInternal(currentKey());
    }

    @Nullable
    SV getInternal(byte[] key) throws IOException {
        byte[] bytes = read(key);
        return bytes == null ? null : deserializeValue(bytes);
    }

    @Override
    public void updateInternal(SV valueToStore) {
        updateInternal(currentKey(), valueToStore);
    }

    void updateInternal(byte[] key, SV valueToStore) {
        write(key, serializeValue(valueToStore));
    }

    /**
     * Reads and deletes each source namespace, returning the values found (merged by {@code
     * merger}), or null when none had one.
     */
    @Nullable
    SV takeSources(Iterable<N> sources, ValueMerger<SV> merger) throws Exception {
        SV current = null;
        for (N source : sources) {
            if (source == null) {
                continue;
            }
            setCurrentNamespace(source);
            byte[] sourceKey = currentKey();
            byte[] bytes = read(sourceKey);
            if (bytes != null) {
                delete(sourceKey);
                SV value = deserializeValue(bytes);
                current = current == null ? value : merger.merge(current, value);
            }
        }
        return current;
    }

    /** Merges the taken sources into the target namespace. */
    void mergeInto(N target, SV merged, ValueMerger<SV> merger) throws Exception {
        setCurrentNamespace(target);
        byte[] targetKey = currentKey();
        SV existing = getInternal(targetKey);
        updateInternal(targetKey, existing == null ? merged : merger.merge(merged, existing));
    }

    /** Reduce or merge of two stored values. */
    interface ValueMerger<SV> {
        SV merge(SV a, SV b) throws Exception;
    }
}
