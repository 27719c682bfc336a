package io.taishan.backend.flink;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.RegisteredStateMetaInfoBase;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.ttl.TtlAwareSerializer;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.function.SupplierWithException;

/**
 * A state's restored meta info and the migration of its stored values, as Flink 2 defines them.
 *
 * <ul>
 *   <li>A state written through the asynchronous State V2 API is restored with meta info of kind
 *       {@code KEY_VALUE_V2}; a synchronous backend registers it as the V1 kind, the same state.
 *   <li>Turning TTL on or off is a migration ({@code StateSerializerProvider} resolves it so): a
 *       value gains a {@code TtlValue} stamped with the current time, or loses it. As Flink's
 *       RocksDB backend does, with {@link TtlAwareSerializer}.
 * </ul>
 */
public final class StateMetaInfos {
    private StateMetaInfos() {}

    /** The meta info a synchronous backend registers for a restored state. */
    public static RegisteredStateMetaInfoBase restored(StateMetaInfoSnapshot snapshot) {
        return RegisteredKeyValueStateBackendMetaInfo.fromMetaInfoSnapshot(snapshot);
    }

    /** Writes one value, read by {@code oldValue} in the prior format, in the new format. */
    @SuppressWarnings("unchecked")
    public static <T> void migrateValue(
            TypeSerializer<T> priorSerializer,
            TypeSerializer<T> newSerializer,
            SupplierWithException<T, IOException> oldValue,
            DataOutputView target,
            TtlTimeProvider ttlTimeProvider)
            throws IOException {
        TtlAwareSerializer<T, ?> prior =
                (TtlAwareSerializer<T, ?>)
                        TtlAwareSerializer.wrapTtlAwareSerializer(priorSerializer);
        TtlAwareSerializer<T, ?> next =
                (TtlAwareSerializer<T, ?>) TtlAwareSerializer.wrapTtlAwareSerializer(newSerializer);
        next.migrateValueFromPriorSerializer(prior, oldValue, target, ttlTimeProvider);
    }
}
