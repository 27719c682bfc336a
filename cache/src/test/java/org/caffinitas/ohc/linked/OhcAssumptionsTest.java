package org.caffinitas.ohc.linked;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.TreeSet;
import org.caffinitas.ohc.CacheSerializer;
import org.caffinitas.ohc.Eviction;
import org.caffinitas.ohc.OHCache;
import org.caffinitas.ohc.OHCacheBuilder;
import org.caffinitas.ohc.Ticker;
import org.junit.jupiter.api.Test;

/**
 * The ohc-core 0.7.4 behaviour that {@code io.taishan.cache.OffHeapStateCache} is built around. If
 * one of these starts failing after an OHC upgrade, the workaround it justifies may be dropped (and
 * {@link TaishanLinkedAccess} must be checked against the new internals anyway).
 */
class OhcAssumptionsTest {

    private static final CacheSerializer<byte[]> BYTES =
            new CacheSerializer<>() {
                @Override
                public void serialize(byte[] v, ByteBuffer buf) {
                    buf.put(v);
                }

                @Override
                public byte[] deserialize(ByteBuffer buf) {
                    byte[] b = new byte[buf.remaining()];
                    buf.get(b);
                    return b;
                }

                @Override
                public int serializedSize(byte[] v) {
                    return v.length;
                }
            };

    private static OHCache<byte[], byte[]> cache(Eviction eviction, long capacity) {
        return OHCacheBuilder.<byte[], byte[]>newBuilder()
                .keySerializer(BYTES)
                .valueSerializer(BYTES)
                .capacity(capacity)
                .segmentCount(1)
                .eviction(eviction)
                .build();
    }

    /** Why keys end in a constant pad byte. */
    @Test
    void lookupsNeverCompareTheLastKeyByte() throws Exception {
        try (OHCache<byte[], byte[]> ohc = cache(Eviction.LRU, 1 << 20)) {
            ConstantHasher.install(ohc, null);
            ohc.put(new byte[] {1, 2, 3}, new byte[] {7});
            assertThat(ohc.get(new byte[] {1, 2, 4}))
                    .as("a foreign key's value")
                    .containsExactly(7);
            assertThat(ohc.get(new byte[] {1, 9, 3})).isNull();
        }
    }

    /** Why expiry is checked by the cache, not with OHC's timeouts. */
    @Test
    void everyDeadlineLandsInTimeoutSlotZero() throws Exception {
        Timeouts timeouts = new Timeouts(Ticker.DEFAULT, 64, 128);
        try {
            Method slot = Timeouts.class.getDeclaredMethod("slot", long.class);
            slot.setAccessible(true);
            Set<Object> slots = new TreeSet<>();
            long now = System.currentTimeMillis();
            for (long d = 0; d < 100_000_000L; d += 9_973) {
                slots.add(slot.invoke(timeouts, now + d));
            }
            slots.add(slot.invoke(timeouts, Long.MAX_VALUE));
            assertThat(slots).containsExactly(0);
        } finally {
            timeouts.release();
        }
    }

    /** Why the off-heap cache evicts LRU: W-TinyLFU trades one main entry for one window entry. */
    @Test
    void wTinyLfuOutgrowsItsCapacityWhenEntriesGetLarger() throws Exception {
        long capacity = 256 * 1024;
        for (Eviction eviction : new Eviction[] {Eviction.W_TINY_LFU, Eviction.LRU}) {
            try (OHCache<byte[], byte[]> ohc = cache(eviction, capacity)) {
                long worst = 0;
                for (int i = 0; i < 20_000; i++) {
                    byte[] k = ("small" + i).getBytes();
                    ohc.put(k, new byte[1]);
                    ohc.get(k);
                    ohc.get(k);
                }
                for (int i = 0; i < 20_000; i++) {
                    byte[] k = ("large" + i).getBytes();
                    for (int j = 0; j < 8; j++) {
                        ohc.get(k);
                    }
                    ohc.put(k, new byte[2000]);
                    worst = Math.max(worst, ohc.memUsed());
                }
                if (eviction == Eviction.LRU) {
                    assertThat(worst).isLessThanOrEqualTo(capacity);
                } else {
                    // 7-8x in eight runs; its tie admission is random, hence the margin.
                    assertThat(worst).isGreaterThan(3 * capacity);
                }
            }
        }
    }
}
