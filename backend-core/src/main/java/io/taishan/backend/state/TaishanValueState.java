package io.taishan.backend.state;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.internal.InternalValueState;

/** {@code ValueState}: one entry per key and namespace. */
final class TaishanValueState<K, N, V> extends AbstractTaishanState<K, N, V>
        implements InternalValueState<K, N, V> {

    TaishanValueState(
            StateContext<K> context,
            int stateId,
            TypeSerializer<N> namespaceSerializer,
            TypeSerializer<V> valueSerializer,
            V defaultValue) {
        super(context, stateId, namespaceSerializer, valueSerializer, defaultValue);
    }

    @Override
    public V value() throws IOException {
        byte[] bytes = read(currentKey());
        return bytes == null ? getDefaultValue() : deserializeValue(bytes);
    }

    @Override
    public void update(V value) {
        if (value == null) {
            clear();
            return;
        }
        write(currentKey(), serializeValue(value));
    }
}
