package io.taishan.backend.state;

import java.util.Collection;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.internal.InternalAggregatingState;

/** {@code AggregatingState}: the accumulator per key and namespace. */
final class TaishanAggregatingState<K, N, T, ACC, R>
        extends AbstractTaishanAppendingState<K, N, T, ACC, R>
        implements InternalAggregatingState<K, N, T, ACC, R> {

    private AggregateFunction<T, ACC, R> aggFunction;

    TaishanAggregatingState(
            StateContext<K> context,
            int stateId,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<ACC> valueSerializer,
            ACC defaultValue,
            AggregateFunction<T, ACC, R> aggFunction) {
        super(context, stateId, namespaceSerializer, valueSerializer, defaultValue);
        this.aggFunction = aggFunction;
    }

    @Override
    public R get() throws Exception {
        ACC accumulator = getInternal();
        return accumulator == null ? null : aggFunction.getResult(accumulator);
    }

    @Override
    public void add(T value) throws Exception {
        byte[] key = currentKey();
        ACC accumulator = getInternal(key);
        if (accumulator == null) {
            accumulator = aggFunction.createAccumulator();
        }
        updateInternal(key, aggFunction.add(value, accumulator));
    }

    @Override
    public void mergeNamespaces(N target, Collection<N> sources) throws Exception {
        if (sources == null || sources.isEmpty()) {
            return;
        }
        ACC merged = takeSources(sources, aggFunction::merge);
        if (merged != null) {
            mergeInto(target, merged, aggFunction::merge);
        }
    }

    TaishanAggregatingState<K, N, T, ACC, R> setAggFunction(
            AggregateFunction<T, ACC, R> aggFunction) {
        this.aggFunction = aggFunction;
        return this;
    }
}
