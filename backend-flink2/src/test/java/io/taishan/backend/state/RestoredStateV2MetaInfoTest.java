package io.taishan.backend.state;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.MapSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.v2.RegisteredKeyAndUserKeyValueStateBackendMetaInfo;
import org.junit.jupiter.api.Test;

/**
 * A checkpoint written by operators on Flink 2's State V2 API holds meta info of kind {@code
 * KEY_VALUE_V2}. Restored by the synchronous backend (an operator with asynchronous state switched
 * off, or Flink's adaptor), each such state must register as the same state of the V1 kind: a value
 * state with its value serializer, a map state with the map serializer of its user key and value.
 */
class RestoredStateV2MetaInfoTest {

    @Test
    void statesOfTheV2KindRegisterAsTheSameSynchronousStates() {
        StateMetaInfoSnapshot count =
                new org.apache.flink.runtime.state.v2.RegisteredKeyValueStateBackendMetaInfo<>(
                                "count",
                                org.apache.flink.api.common.state.v2.StateDescriptor.Type.VALUE,
                                VoidNamespaceSerializer.INSTANCE,
                                LongSerializer.INSTANCE)
                        .snapshot();
        StateMetaInfoSnapshot last =
                new RegisteredKeyAndUserKeyValueStateBackendMetaInfo<>(
                                "last",
                                org.apache.flink.api.common.state.v2.StateDescriptor.Type.MAP,
                                VoidNamespaceSerializer.INSTANCE,
                                LongSerializer.INSTANCE,
                                StringSerializer.INSTANCE)
                        .snapshot();
        assertThat(count.getBackendStateType())
                .isEqualTo(StateMetaInfoSnapshot.BackendStateType.KEY_VALUE_V2);

        RegisteredStates states = new RegisteredStates(List.of(count, last));

        assertThat(states.get("count").isKeyValue()).isTrue();
        RegisteredKeyValueStateBackendMetaInfo<?, ?> countInfo =
                (RegisteredKeyValueStateBackendMetaInfo<?, ?>) states.get("count").metaInfo();
        assertThat(countInfo.getStateType()).isEqualTo(StateDescriptor.Type.VALUE);
        assertThat(countInfo.getStateSerializer()).isEqualTo(LongSerializer.INSTANCE);

        assertThat(states.get("last").isKeyValue()).isTrue();
        RegisteredKeyValueStateBackendMetaInfo<?, ?> lastInfo =
                (RegisteredKeyValueStateBackendMetaInfo<?, ?>) states.get("last").metaInfo();
        assertThat(lastInfo.getStateType()).isEqualTo(StateDescriptor.Type.MAP);
        assertThat(lastInfo.getStateSerializer())
                .isEqualTo(new MapSerializer<>(StringSerializer.INSTANCE, LongSerializer.INSTANCE));
    }
}
