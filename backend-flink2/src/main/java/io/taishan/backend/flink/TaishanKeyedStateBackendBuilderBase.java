package io.taishan.backend.flink;

import java.util.Collection;
import javax.annotation.Nonnull;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.query.TaskKvStateRegistry;
import org.apache.flink.runtime.state.AbstractKeyedStateBackendBuilder;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StreamCompressionDecorator;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;

/** {@code AbstractKeyedStateBackendBuilder} as Flink 2 has it. */
public abstract class TaishanKeyedStateBackendBuilderBase<K>
        extends AbstractKeyedStateBackendBuilder<K> {
    protected final StateTracking stateTracking;

    protected TaishanKeyedStateBackendBuilderBase(
            TaskKvStateRegistry kvStateRegistry,
            TypeSerializer<K> keySerializer,
            ClassLoader userCodeClassLoader,
            int numberOfKeyGroups,
            KeyGroupRange keyGroupRange,
            ExecutionConfig executionConfig,
            TtlTimeProvider ttlTimeProvider,
            StateTracking stateTracking,
            @Nonnull Collection<KeyedStateHandle> stateHandles,
            StreamCompressionDecorator keyGroupCompressionDecorator,
            CloseableRegistry cancelStreamRegistry) {
        super(
                kvStateRegistry,
                keySerializer,
                userCodeClassLoader,
                numberOfKeyGroups,
                keyGroupRange,
                executionConfig,
                ttlTimeProvider,
                stateTracking.latency,
                stateTracking.size,
                stateHandles,
                keyGroupCompressionDecorator,
                cancelStreamRegistry);
        this.stateTracking = stateTracking;
    }
}
