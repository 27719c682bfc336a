package io.taishan.snapshot;

import java.util.List;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.runtime.state.KeyedBackendSerializationProxy;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.StateSnapshotTransformer.StateSnapshotTransformFactory;

/** The meta info the manifests of these tests carry: one value state "counts", String keys. */
public final class TestMetaInfo {
    private TestMetaInfo() {}

    public static KeyedBackendSerializationProxy<String> counts() {
        RegisteredKeyValueStateBackendMetaInfo<String, Long> counts =
                new RegisteredKeyValueStateBackendMetaInfo<>(
                        StateDescriptor.Type.VALUE,
                        "counts",
                        StringSerializer.INSTANCE,
                        LongSerializer.INSTANCE,
                        StateSnapshotTransformFactory.noTransform());
        return new KeyedBackendSerializationProxy<>(
                StringSerializer.INSTANCE, List.of(counts.snapshot()), false);
    }
}
