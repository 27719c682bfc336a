package io.taishan.backend.state;

import java.util.Collection;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.internal.InternalReducingState;

/** {@code ReducingState}: the reduced value per key and namespace. */
final class TaishanReducingState<K, N, V> extends AbstractTaishanAppendingState<K, N, V, V, V>
        implements InternalReducingState<K, N, V> {

    private ReduceFunction<V> reduceFunction;

    TaishanReducingState(
            StateContext<K> context,
            int stateId,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<V> valueSerializer,
            V defaultValue,
            ReduceFunction<V> reduceFunction) {
        super(context, stateId, namespaceSerializer, valueSerializer, defaultValue);
        this.reduceFunction = reduceFunction;
    }

    @Override
    public V get() throws Exception {
        return getInternal();
    }

    @Override
    public void add(V value) throws Exception {
        byte[] key = currentKey();
        V old = getInternal(key);
        updateInternal(key, old == null ? value : reduceFunction.reduce(old, value));
    }

    @Override
    public void mergeNamespaces(N target, Collection<N> sources) throws Exception {
        if (sources == null || sources.isEmpty()) {
            return;
        }
        V merged = takeSources(sources, reduceFunction::reduce);
        if (merged != null) {
            mergeInto(target, merged, reduceFunction::reduce);
        }
    }

    TaishanReducingState<K, N, V> setReduceFunction(ReduceFunction<V> reduceFunction) {
        this.reduceFunction = reduceFunction;
        return this;
    }
}
