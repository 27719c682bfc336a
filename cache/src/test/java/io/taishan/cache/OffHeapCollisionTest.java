package io.taishan.cache;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.caffinitas.ohc.OHCache;
import org.caffinitas.ohc.linked.ConstantHasher;
import org.caffinitas.ohc.linked.TaishanLinkedAccess;
import org.junit.jupiter.api.Test;

/**
 * The off-heap cache with every hash equal: all entries in one bucket chain, so the answers are
 * right only if lookups compare whole keys (OHC alone does not, see OhcAssumptionsTest).
 */
class OffHeapCollisionTest {

    @Test
    void keysThatCollideAreStillToldApart() throws Exception {
        ManualClock clock = new ManualClock(1_700_000_000_000L);
        OffHeapStateCache cache = new OffHeapStateCache(1 << 20, 1, clock);
        try {
            ConstantHasher.install(
                    (OHCache<?, ?>) field(cache, "ohc"),
                    (TaishanLinkedAccess) field(cache, "access"));
            Random rnd = new Random(7);
            List<byte[]> keys = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                byte[] k = new byte[rnd.nextInt(12)];
                rnd.nextBytes(k);
                keys.add(k);
                if (k.length > 0) {
                    byte[] last = k.clone();
                    last[k.length - 1]++;
                    keys.add(last);
                }
            }
            long[] spaces = {cache.newSpace(), cache.newSpace()};
            CacheModel model = new CacheModel();
            for (int op = 0; op < 20_000; op++) {
                long space = spaces[rnd.nextInt(2)];
                byte[] key = keys.get(rnd.nextInt(keys.size()));
                long now = clock.millis();
                switch (rnd.nextInt(4)) {
                    case 0 -> {
                        byte[] v = new byte[rnd.nextInt(20)];
                        rnd.nextBytes(v);
                        cache.put(space, key, v, StateCache.NEVER);
                        model.put(space, key, v, StateCache.NEVER, now);
                    }
                    case 1 -> {
                        cache.invalidate(space, key);
                        model.invalidate(space, key);
                    }
                    default -> model.check(space, key, cache.get(space, key), now);
                }
            }
            assertThat(cache.stats().hits()).isGreaterThan(1_000);
            assertThat(cache.stats().evictions()).as("all kept: misses are not evictions").isZero();
        } finally {
            cache.close();
        }
    }

    private static Object field(Object target, String name) throws ReflectiveOperationException {
        Field f = target.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }
}
