package io.taishan.cache;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * What a cache may answer, per (space, key): the latest put or putAbsent with its deadline, or
 * nothing. Checks each answer of the real cache against it: a miss is always allowed (eviction);
 * anything else must be exactly the latest value, still live.
 */
final class CacheModel {
    private record Key(long space, String key) {}

    private record Entry(byte[] value, long expireAt) {}

    private final Map<Key, Entry> entries = new HashMap<>();

    void put(long space, byte[] key, byte[] value, long expireAt, long now) {
        if (expireAt != StateCache.NEVER && expireAt <= now) {
            entries.remove(key(space, key));
        } else {
            entries.put(key(space, key), new Entry(value == null ? null : value.clone(), expireAt));
        }
    }

    void invalidate(long space, byte[] key) {
        entries.remove(key(space, key));
    }

    /** Asserts that {@code actual} is an answer the cache may give now; returns it. */
    byte[] check(long space, byte[] key, byte[] actual, long now) {
        Entry e = entries.get(key(space, key));
        String where = "space " + space + " key " + Arrays.toString(key);
        if (e == null || (e.expireAt != StateCache.NEVER && e.expireAt <= now)) {
            assertThat(actual).as("nothing live is cached for " + where).isNull();
        } else if (e.value == null) {
            assertThat(actual == null || actual == StateCache.ABSENT)
                    .as(
                            "known absent (or a miss) for "
                                    + where
                                    + ", got "
                                    + Arrays.toString(actual))
                    .isTrue();
        } else if (actual != null) {
            assertThat(actual).as("latest value for " + where).isNotSameAs(StateCache.ABSENT);
            assertThat(actual).as("latest value for " + where).isEqualTo(e.value);
        }
        return actual;
    }

    private static Key key(long space, byte[] key) {
        return new Key(space, Arrays.toString(key));
    }
}
