package io.taishan.backend.flink;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.runtime.state.RegisteredStateMetaInfoBase;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.function.SupplierWithException;

/**
 * A state's restored meta info and the migration of its stored values, as Flink 1.20 defines them:
 * turning TTL on or off is not a migration here (Flink 1.20 refuses it as incompatible).
 */
public final class StateMetaInfos {
    private StateMetaInfos() {}

    /** The meta info a synchronous backend registers for a restored state. */
    public static RegisteredStateMetaInfoBase restored(StateMetaInfoSnapshot snapshot) {
        return RegisteredStateMetaInfoBase.fromMetaInfoSnapshot(snapshot);
    }

    /** Writes one value, read by {@code oldValue} in the prior format, in the new format. */
    public static <T> void migrateValue(
            TypeSerializer<T> priorSerializer,
            TypeSerializer<T> newSerializer,
            SupplierWithException<T, IOException> oldValue,
            DataOutputView target,
            TtlTimeProvider ttlTimeProvider)
            throws IOException {
        newSerializer.serialize(oldValue.get(), target);
    }
}
