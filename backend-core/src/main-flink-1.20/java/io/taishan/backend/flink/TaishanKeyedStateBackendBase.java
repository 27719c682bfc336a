package io.taishan.backend.flink;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.query.TaskKvStateRegistry;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.InternalKeyContext;
import org.apache.flink.runtime.state.StreamCompressionDecorator;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;

/**
 * {@code AbstractKeyedStateBackend} as Flink 1.20 has it: one way to set the current key, {@link
 * #setCurrentKey}.
 */
public abstract class TaishanKeyedStateBackendBase<K> extends AbstractKeyedStateBackend<K> {

    protected TaishanKeyedStateBackendBase(
            TaskKvStateRegistry kvStateRegistry,
            TypeSerializer<K> keySerializer,
            ClassLoader userCodeClassLoader,
            ExecutionConfig executionConfig,
            TtlTimeProvider ttlTimeProvider,
            StateTracking stateTracking,
            CloseableRegistry cancelStreamRegistry,
            StreamCompressionDecorator keyGroupCompressionDecorator,
            InternalKeyContext<K> keyContext) {
        super(
                kvStateRegistry,
                keySerializer,
                userCodeClassLoader,
                executionConfig,
                ttlTimeProvider,
                stateTracking.latency,
                cancelStreamRegistry,
                keyGroupCompressionDecorator,
                keyContext);
    }

    @Override
    public final void setCurrentKey(K newKey) {
        super.setCurrentKey(newKey);
        currentKeyChanged();
    }

    /** Called after every change of the current key, whichever way Flink made it. */
    protected abstract void currentKeyChanged();
}
