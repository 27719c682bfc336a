package io.taishan.backend.state;

import io.taishan.backend.read.StateReader;
import io.taishan.backend.write.StateWriter;
import io.taishan.kv.client.ShardLease;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;

/**
 * What a state needs from its keyed backend, and no more: the current key (as the shared key
 * builder holds it), the shards, and the read and write paths.
 */
public interface StateContext<K> {

    /** Holds the current key and its key group; shared by every state of the backend. */
    SerializedCompositeKeyBuilder<K> sharedKeyBuilder();

    /** Changes whenever the current key does, so a state can keep what it derived from it. */
    long currentKeyVersion();

    ShardLease currentLease();

    /** The lease of an owned key group. */
    ShardLease leaseOf(int keyGroup);

    int keyGroupPrefixBytes();

    int numberOfKeyGroups();

    TypeSerializer<K> keySerializer();

    StateReader reader();

    StateWriter writer();
}
