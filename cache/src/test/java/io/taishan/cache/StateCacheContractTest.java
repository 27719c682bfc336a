package io.taishan.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The contract of {@link StateCache}, case by case, for both implementations that keep data. */
class StateCacheContractTest {

    private static final long NOW = 1_700_000_000_000L;
    private static final long CAPACITY = 64 * 1024;

    private final ManualClock clock = new ManualClock(NOW);
    private SharedStateCache cache;

    private StateCache create(CacheType type) {
        cache = Caches.create(type, CAPACITY, clock);
        return cache;
    }

    @AfterEach
    void close() {
        if (cache != null) {
            cache.close();
        }
    }

    private static byte[] bytes(int... values) {
        byte[] b = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            b[i] = (byte) values[i];
        }
        return b;
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void knownAbsentIsTheSentinelAndAnEmptyValueIsNot(CacheType type) {
        StateCache c = create(type);
        long s = c.newSpace();
        c.put(s, bytes(1), new byte[0], StateCache.NEVER);
        c.putAbsent(s, bytes(2), StateCache.NEVER);
        c.put(s, bytes(3), StateCache.ABSENT, StateCache.NEVER);

        assertThat(c.get(s, bytes(1))).isEmpty();
        assertThat(c.get(s, bytes(1))).isNotSameAs(StateCache.ABSENT);
        assertThat(c.get(s, bytes(2))).isSameAs(StateCache.ABSENT);
        assertThat(c.get(s, bytes(3))).isSameAs(StateCache.ABSENT);
        assertThat(c.get(s, bytes(4))).isNull();

        c.put(s, bytes(2), bytes(9), StateCache.NEVER);
        assertThat(c.get(s, bytes(2))).containsExactly(9);
        c.putAbsent(s, bytes(2), StateCache.NEVER);
        assertThat(c.get(s, bytes(2))).isSameAs(StateCache.ABSENT);
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void arraysAreCopiedInAndOut(CacheType type) {
        StateCache c = create(type);
        long s = c.newSpace();
        byte[] key = bytes(1, 2);
        byte[] value = bytes(7, 7, 7);
        c.put(s, key, value, StateCache.NEVER);
        value[0] = 0;
        key[1] = 3;

        byte[] first = c.get(s, bytes(1, 2));
        assertThat(first).containsExactly(7, 7, 7);
        first[1] = 0;
        byte[] second = c.get(s, bytes(1, 2));
        assertThat(second).containsExactly(7, 7, 7).isNotSameAs(first);
        assertThat(c.get(s, bytes(1, 3))).isNull();
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void entriesExpireExactlyAtTheirDeadline(CacheType type) {
        StateCache c = create(type);
        long s = c.newSpace();
        c.put(s, bytes(1), bytes(1), NOW + 10);
        c.putAbsent(s, bytes(2), NOW + 10);
        c.put(s, bytes(3), bytes(3), StateCache.NEVER);

        clock.advance(9);
        assertThat(c.get(s, bytes(1))).containsExactly(1);
        assertThat(c.get(s, bytes(2))).isSameAs(StateCache.ABSENT);

        clock.advance(1);
        assertThat(c.get(s, bytes(1))).isNull();
        assertThat(c.get(s, bytes(2))).isNull();
        assertThat(c.get(s, bytes(3))).containsExactly(3);

        clock.advance(1_000_000_000L);
        assertThat(c.get(s, bytes(3))).containsExactly(3);
        if (cache instanceof OnHeapStateCache onHeap) {
            onHeap.cleanUp();
        }
        assertThat(c.stats().expirations()).isEqualTo(2);
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void aPutThatCannotBeKeptDropsTheOlderEntry(CacheType type) {
        StateCache c = create(type);
        long s = c.newSpace();
        c.put(s, bytes(1), bytes(1), StateCache.NEVER);
        c.put(s, bytes(1), bytes(2), NOW);
        assertThat(c.get(s, bytes(1))).as("already expired").isNull();

        c.put(s, bytes(2), bytes(1), StateCache.NEVER);
        c.put(s, bytes(2), new byte[(int) CAPACITY * 2], StateCache.NEVER);
        assertThat(c.get(s, bytes(2))).as("larger than the cache").isNull();

        c.putAbsent(s, bytes(3), StateCache.NEVER);
        c.putAbsent(s, bytes(3), NOW - 1);
        assertThat(c.get(s, bytes(3))).as("already expired absent").isNull();
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void invalidateDropsOnlyThatKey(CacheType type) {
        StateCache c = create(type);
        long s = c.newSpace();
        c.put(s, bytes(1), bytes(1), StateCache.NEVER);
        c.putAbsent(s, bytes(2), StateCache.NEVER);
        c.invalidate(s, bytes(1));
        c.invalidate(s, bytes(2));
        c.invalidate(s, bytes(3));
        assertThat(c.get(s, bytes(1))).isNull();
        assertThat(c.get(s, bytes(2))).isNull();
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void confusableKeysAndSpacesAreDistinct(CacheType type) {
        StateCache c = create(type);
        long s1 = c.newSpace();
        long s2 = c.newSpace();
        byte[] longKey = new byte[300];
        byte[] longKeyOtherLastByte = longKey.clone();
        longKeyOtherLastByte[299] = 1;
        byte[][] keys = {
            bytes(),
            bytes(0),
            bytes(0, 0),
            bytes(1, 2, 3),
            bytes(1, 2, 4),
            bytes(1, 2, 3, 0),
            longKey,
            longKeyOtherLastByte
        };
        for (int i = 0; i < keys.length; i++) {
            c.put(s1, keys[i], bytes(1, i), StateCache.NEVER);
            c.put(s2, keys[i], bytes(2, i), StateCache.NEVER);
        }
        for (int i = 0; i < keys.length; i++) {
            assertThat(c.get(s1, keys[i])).containsExactly(1, i);
            assertThat(c.get(s2, keys[i])).containsExactly(2, i);
        }
    }

    @ParameterizedTest
    @EnumSource(CacheType.class)
    void spacesAreNeverHandedOutTwice(CacheType type) {
        StateCache c = create(type);
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            assertThat(seen.add(c.newSpace())).isTrue();
        }
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void statsCountWhatHappened(CacheType type) {
        StateCache c = create(type);
        long s = c.newSpace();
        c.put(s, bytes(1), new byte[100], StateCache.NEVER);
        c.putAbsent(s, bytes(2), StateCache.NEVER);
        c.get(s, bytes(1));
        c.get(s, bytes(1));
        c.get(s, bytes(2));
        c.get(s, bytes(3));

        CacheStats stats = c.stats();
        assertThat(stats.hits()).isEqualTo(2);
        assertThat(stats.absentHits()).isEqualTo(1);
        assertThat(stats.misses()).isEqualTo(1);
        assertThat(stats.puts()).isEqualTo(2);
        assertThat(stats.entries()).isEqualTo(2);
        assertThat(stats.capacity()).isEqualTo(CAPACITY);
        assertThat(stats.evictions()).isZero();
        assertThat(stats.hitRate()).isEqualTo(0.75);
        // Both count per-entry overhead on top of the 1 + 1 key bytes and 100 value bytes.
        assertThat(stats.bytesUsed()).isGreaterThan(2 * 64 + 100).isLessThan(1024);
    }

    @ParameterizedTest
    @EnumSource(CacheType.class)
    void nullArgumentsAreRejected(CacheType type) {
        StateCache c = create(type);
        assertThatThrownBy(() -> c.get(1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> c.put(1, null, bytes(1), StateCache.NEVER))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> c.put(1, bytes(1), null, StateCache.NEVER))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> c.putAbsent(1, null, StateCache.NEVER))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> c.invalidate(1, null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void noneAlwaysMisses() {
        StateCache c = create(CacheType.NONE);
        long s = c.newSpace();
        c.put(s, bytes(1), bytes(1), StateCache.NEVER);
        c.putAbsent(s, bytes(2), StateCache.NEVER);
        assertThat(c.get(s, bytes(1))).isNull();
        assertThat(c.get(s, bytes(2))).isNull();
        assertThat(c.type()).isEqualTo(CacheType.NONE);
        CacheStats stats = c.stats();
        assertThat(stats.misses()).isEqualTo(2);
        assertThat(stats.puts()).isEqualTo(2);
        assertThat(stats.hits() + stats.absentHits() + stats.entries() + stats.bytesUsed())
                .isZero();
    }
}
