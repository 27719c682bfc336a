package io.taishan.backend.state;

import io.taishan.backend.flink.StateMetaInfos;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.annotation.Nullable;
import org.apache.flink.runtime.state.RegisteredKeyValueStateBackendMetaInfo;
import org.apache.flink.runtime.state.RegisteredStateMetaInfoBase;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;
import org.apache.flink.util.FlinkRuntimeException;

/**
 * The states a keyed backend knows, by name, in registration order (restored ones first): each with
 * its id in the store and Flink's meta info. Ids come from the names ({@link StateKeys}), so every
 * subtask and every restore agrees on them; two names with one id fail registration.
 */
public final class RegisteredStates {

    /** A registered state: its id in the store and Flink's meta info. */
    public record Info(int stateId, RegisteredStateMetaInfoBase metaInfo) {
        public Info {
            Objects.requireNonNull(metaInfo);
        }

        public boolean isKeyValue() {
            return metaInfo instanceof RegisteredKeyValueStateBackendMetaInfo;
        }
    }

    private final LinkedHashMap<String, Info> byName = new LinkedHashMap<>();
    private final Map<Integer, String> namesById = new HashMap<>();

    public RegisteredStates(List<StateMetaInfoSnapshot> restored) {
        for (StateMetaInfoSnapshot snapshot : restored) {
            register(StateMetaInfos.restored(snapshot));
        }
    }

    /** Registers or replaces the meta info of a state; fails if its id is another name's. */
    public Info register(RegisteredStateMetaInfoBase metaInfo) {
        String name = metaInfo.getName();
        int stateId = StateKeys.stateId(name);
        String holder = namesById.putIfAbsent(stateId, name);
        if (holder != null && !holder.equals(name)) {
            throw new FlinkRuntimeException(
                    "The state names '"
                            + holder
                            + "' and '"
                            + name
                            + "' map to the same Taishan state id "
                            + stateId
                            + "; rename one of them.");
        }
        Info info = new Info(stateId, metaInfo);
        byName.put(name, info);
        return info;
    }

    @Nullable
    public Info get(String name) {
        return byName.get(name);
    }

    public boolean isEmpty() {
        return byName.isEmpty();
    }

    public int size() {
        return byName.size();
    }

    public Collection<Info> all() {
        return byName.values();
    }

    /** The meta info of every state, as a snapshot writes it. */
    public List<StateMetaInfoSnapshot> metaInfoSnapshots() {
        List<StateMetaInfoSnapshot> snapshots = new ArrayList<>(byName.size());
        for (Info info : byName.values()) {
            snapshots.add(info.metaInfo().snapshot());
        }
        return snapshots;
    }

    public void clear() {
        byName.clear();
        namesById.clear();
    }
}
