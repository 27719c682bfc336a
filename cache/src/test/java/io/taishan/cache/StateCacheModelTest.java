package io.taishan.cache;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Random operations against a model, with a capacity far below the data so eviction never stops,
 * timed entries on a manual clock, and keys chosen to be confusable: empty, prefixes of each other,
 * differing only in the last byte, equal across spaces, longer than the off-heap key pool.
 */
class StateCacheModelTest {

    private static final long CAPACITY = 48 * 1024;

    /** Larger than a test OHC segment (and than a fifth of the cache): never kept. */
    private static final int HUGE_VALUE = 40 * 1024;

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void randomOperationsMatchTheModel(CacheType type) {
        for (long seed = 1; seed <= 3; seed++) {
            ManualClock clock = new ManualClock(1_700_000_000_000L);
            SharedStateCache cache = Caches.create(type, CAPACITY, clock);
            try {
                run(cache, clock, new Random(seed), 40_000, true, true);
                CacheStats s = cache.stats();
                assertThat(s.hits()).as("hits").isPositive();
                assertThat(s.absentHits()).as("absent hits").isPositive();
                assertThat(s.misses()).as("misses").isPositive();
                assertThat(s.evictions()).as("evictions").isGreaterThan(1000);
                assertThat(s.expirations()).as("expirations").isPositive();
            } finally {
                cache.close();
            }
        }
    }

    /**
     * The same with a local disk tier behind a memory tier far smaller than the data, and a disk
     * tier small enough that its oldest segment is dropped again and again.
     */
    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void withALocalDiskTierRandomOperationsMatchTheModel(CacheType type, @TempDir Path dir) {
        for (long seed = 1; seed <= 3; seed++) {
            ManualClock clock = new ManualClock(1_700_000_000_000L);
            LocalDiskCache disk =
                    new LocalDiskCache(
                            new LocalDiskCache.Spec(dir.toString(), LocalDiskCache.MIN_BYTES),
                            clock);
            SharedStateCache cache =
                    new TieredStateCache(Caches.create(type, CAPACITY / 4, clock), disk);
            try {
                run(cache, clock, new Random(seed), 60_000, true, true);
                CacheStats local = cache.localStats().orElseThrow();
                assertThat(local.hits()).as("disk hits").isPositive();
                assertThat(local.absentHits()).as("disk absent hits").isPositive();
                assertThat(local.misses()).as("disk misses").isPositive();
                assertThat(local.evictions()).as("disk evictions").isPositive();
                assertThat(local.expirations()).as("disk expirations").isPositive();
            } finally {
                cache.close();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void concurrentThreadsOnDisjointSpacesEachSeeOnlyTheirOwnLatestValues(CacheType type)
            throws Exception {
        ManualClock clock = new ManualClock(1_700_000_000_000L);
        SharedStateCache cache = Caches.create(type, CAPACITY, clock);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<CacheStats>> runs = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                long seed = 100 + t;
                // The clock is shared, so only thread 0 moves it; the others' models read it too.
                boolean movesClock = t == 0;
                runs.add(
                        pool.submit(
                                () -> {
                                    run(cache, clock, new Random(seed), 25_000, movesClock, false);
                                    return cache.stats();
                                }));
            }
            for (Future<CacheStats> run : runs) {
                run.get(60, TimeUnit.SECONDS);
            }
            if (cache instanceof OnHeapStateCache onHeap) {
                // Concurrent writers may each skip Caffeine's maintenance (it is a tryLock).
                onHeap.cleanUp();
            }
            CacheStats s = cache.stats();
            assertThat(s.hits()).isPositive();
            assertThat(s.evictions()).isPositive();
            assertThat(s.bytesUsed()).isLessThanOrEqualTo(CAPACITY);
        } finally {
            pool.shutdownNow();
            cache.close();
        }
    }

    /**
     * One thread's run over spaces of its own. Each check uses the time read before the operation:
     * the cache reads the clock later, never earlier, so anything it returned was live then too,
     * and anything expired then is expired for the cache as well.
     */
    private static void run(
            SharedStateCache cache,
            ManualClock clock,
            Random rnd,
            int ops,
            boolean movesClock,
            boolean checksCapacity) {
        CacheModel model = new CacheModel();
        List<Long> spaces = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            spaces.add(cache.newSpace());
        }
        byte[][] keys = keys(rnd);
        long capacity = cache.stats().capacity();
        for (int op = 0; op < ops; op++) {
            long space = spaces.get(rnd.nextInt(spaces.size()));
            byte[] key = keys[rnd.nextInt(keys.length)];
            int dice = rnd.nextInt(100);
            long now = clock.millis();
            if (dice < 5) {
                // Null: no tier may keep the key afterwards.
                byte[] actual = model.check(space, key, cache.getForUpdate(space, key), now);
                if (actual == null) {
                    model.invalidate(space, key);
                }
            } else if (dice < 40) {
                byte[] actual = cache.get(space, key);
                // The entry was live at 'now' if the cache returned it; a concurrent clock move
                // after the get must not turn that into a failure.
                model.check(space, key, actual, now);
            } else if (dice < 65) {
                byte[] value = value(rnd, rnd.nextInt(100) == 0 ? HUGE_VALUE : rnd.nextInt(300));
                long expireAt = expireAt(rnd, now);
                cache.put(space, key, value, expireAt);
                model.put(space, key, value, expireAt, now);
            } else if (dice < 77) {
                long expireAt = expireAt(rnd, now);
                cache.putAbsent(space, key, expireAt);
                model.put(space, key, null, expireAt, now);
            } else if (dice < 87) {
                cache.invalidate(space, key);
                model.invalidate(space, key);
            } else if (dice < 88) {
                // A new generation: the old space is never written again, but is still read.
                spaces.set(rnd.nextInt(spaces.size()), cache.newSpace());
            } else if (movesClock) {
                clock.advance(rnd.nextInt(4));
            }
            if (checksCapacity && dice >= 40 && dice < 87) {
                assertThat(cache.stats().bytesUsed()).isLessThanOrEqualTo(capacity);
            }
        }
        // Every key of every space this run wrote, once more, at the end.
        for (long space : spaces) {
            for (byte[] key : keys) {
                long now = clock.millis();
                model.check(space, key, cache.get(space, key), now);
            }
        }
    }

    private static long expireAt(Random rnd, long now) {
        int dice = rnd.nextInt(10);
        if (dice < 5) {
            return StateCache.NEVER;
        }
        if (dice == 5) {
            // already expired: the put must drop what was there
            return now - rnd.nextInt(3);
        }
        return now + 1 + rnd.nextInt(40);
    }

    private static byte[] value(Random rnd, int length) {
        byte[] v = new byte[length];
        rnd.nextBytes(v);
        return v;
    }

    /** 200 keys with deliberate near-collisions. */
    private static byte[][] keys(Random rnd) {
        List<byte[]> keys = new ArrayList<>();
        keys.add(new byte[0]);
        keys.add(new byte[] {0});
        keys.add(new byte[] {0, 0});
        while (keys.size() < 200) {
            int dice = rnd.nextInt(20);
            byte[] k;
            if (dice == 0) {
                // longer than the off-heap pooled key buffers
                k = value(rnd, 250 + rnd.nextInt(60));
            } else {
                k = value(rnd, 1 + rnd.nextInt(24));
            }
            keys.add(k);
            byte[] lastByte = k.clone();
            lastByte[k.length - 1] ^= 1;
            keys.add(lastByte);
            byte[] extended = Arrays.copyOf(k, k.length + 1);
            keys.add(extended);
        }
        return keys.toArray(new byte[0][]);
    }
}
