package io.taishan.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.caffinitas.ohc.linked.OffHeapLeakProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class StateCacheRegistryTest {

    private static final long MIB = 1 << 20;

    private final StateCacheRegistry registry =
            new StateCacheRegistry(new ManualClock(1_700_000_000_000L), 2);

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void capacityIsTheSumOfTheLiveHandlesContributions(CacheType type) {
        StateCacheHandle a = registry.acquire(type, MIB);
        StateCacheHandle b = registry.acquire(type, 2 * MIB);
        StateCacheHandle c = registry.acquire(type, 3 * MIB);
        assertThat(registry.liveHandles(type)).isEqualTo(3);
        assertThat(registry.capacity(type)).isEqualTo(6 * MIB);
        assertThat(a.stats().capacity()).isEqualTo(6 * MIB);

        b.close();
        b.close();
        assertThat(registry.liveHandles(type)).isEqualTo(2);
        assertThat(registry.capacity(type)).isEqualTo(4 * MIB);
        assertThat(c.stats().capacity()).isEqualTo(4 * MIB);

        a.close();
        assertThat(c.stats().capacity()).isEqualTo(3 * MIB);
        c.close();
        assertThat(registry.liveHandles(type)).isZero();
        assertThat(registry.capacity(type)).isZero();
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void handlesShareOneInstanceAndTheLastCloseEndsIt(CacheType type) {
        StateCacheHandle a = registry.acquire(type, MIB);
        StateCacheHandle b = registry.acquire(type, MIB);
        long space = a.newSpace();
        assertThat(b.newSpace()).isNotEqualTo(space);
        a.put(space, new byte[] {1}, new byte[] {42}, StateCache.NEVER);
        assertThat(b.get(space, new byte[] {1})).containsExactly(42);

        a.close();
        assertThat(b.get(space, new byte[] {1}))
                .as("survives a non-last close")
                .containsExactly(42);
        b.close();

        try (StateCacheHandle fresh = registry.acquire(type, MIB)) {
            assertThat(fresh.get(space, new byte[] {1})).isNull();
            assertThat(fresh.stats().entries()).isZero();
            assertThat(fresh.stats().puts()).isZero();
            assertThat(fresh.stats().capacity()).isEqualTo(MIB);
        }
    }

    @Test
    void theLastCloseFreesTheOffHeapMemory() {
        assertThat(OffHeapLeakProbe.enabled()).as("OHC allocation tracking").isTrue();
        int before = OffHeapLeakProbe.outstandingAllocations();
        StateCacheHandle a = registry.acquire(CacheType.OFF_HEAP, MIB);
        StateCacheHandle b = registry.acquire(CacheType.OFF_HEAP, MIB);
        long space = a.newSpace();
        for (int i = 0; i < 5_000; i++) {
            a.put(space, new byte[] {(byte) i, (byte) (i >> 8)}, new byte[100], StateCache.NEVER);
        }
        assertThat(a.stats().entries()).isEqualTo(5_000);
        int filled = OffHeapLeakProbe.outstandingAllocations();
        assertThat(filled).isGreaterThanOrEqualTo(before + 5_000);

        a.close();
        assertThat(OffHeapLeakProbe.outstandingAllocations()).isEqualTo(filled);
        b.close();
        assertThat(OffHeapLeakProbe.outstandingAllocations()).isEqualTo(before);
        assertThat(b.stats()).isEqualTo(CacheStats.EMPTY);
    }

    @Test
    void typesDoNotConflictAndNoneHoldsNothing() {
        StateCacheHandle off = registry.acquire(CacheType.OFF_HEAP, 2 * MIB);
        StateCacheHandle on = registry.acquire(CacheType.ON_HEAP, MIB);
        StateCacheHandle none = registry.acquire(CacheType.NONE, 0);
        StateCacheHandle none2 = registry.acquire(CacheType.NONE, 5 * MIB);
        assertThat(off.type()).isEqualTo(CacheType.OFF_HEAP);
        assertThat(on.type()).isEqualTo(CacheType.ON_HEAP);
        assertThat(none.type()).isEqualTo(CacheType.NONE);
        assertThat(registry.capacity(CacheType.OFF_HEAP)).isEqualTo(2 * MIB);
        assertThat(registry.capacity(CacheType.ON_HEAP)).isEqualTo(MIB);
        assertThat(registry.capacity(CacheType.NONE)).isZero();
        assertThat(registry.liveHandles(CacheType.NONE)).isZero();
        assertThat(none2.contributedBytes()).isZero();

        long space = none.newSpace();
        none.put(space, new byte[] {1}, new byte[] {1}, StateCache.NEVER);
        assertThat(none.get(space, new byte[] {1})).isNull();
        for (StateCacheHandle h : List.of(off, on, none, none2)) {
            h.close();
        }
        assertThat(registry.liveHandles(CacheType.OFF_HEAP)).isZero();
        assertThat(registry.liveHandles(CacheType.ON_HEAP)).isZero();
    }

    @Test
    void badAcquiresFailClearly() {
        assertThatThrownBy(() -> registry.acquire(CacheType.OFF_HEAP, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("use NONE");
        assertThatThrownBy(() -> registry.acquire(CacheType.ON_HEAP, -1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> registry.acquire(null, MIB))
                .isInstanceOf(NullPointerException.class);
        assertThat(registry.liveHandles(CacheType.OFF_HEAP)).isZero();
    }

    @Test
    void aClosedHandleRefusesUse() {
        StateCacheHandle h = registry.acquire(CacheType.ON_HEAP, MIB);
        h.close();
        assertThat(h.isClosed()).isTrue();
        assertThatThrownBy(() -> h.get(1, new byte[] {1}))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> h.put(1, new byte[] {1}, new byte[] {1}, StateCache.NEVER))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(h::newSpace).isInstanceOf(IllegalStateException.class);
        assertThat(h.stats()).isEqualTo(CacheStats.EMPTY);
    }

    @ParameterizedTest
    @EnumSource(
            value = CacheType.class,
            names = {"OFF_HEAP", "ON_HEAP"})
    void concurrentAcquiresAndClosesKeepTheSumExact(CacheType type) throws Exception {
        StateCacheHandle base = registry.acquire(type, MIB);
        int threads = 4;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long seed = t;
                runs.add(
                        pool.submit(
                                () -> {
                                    Random rnd = new Random(seed);
                                    start.await();
                                    for (int i = 0; i < 200; i++) {
                                        StateCacheHandle h =
                                                registry.acquire(type, 1 + rnd.nextInt(1 << 16));
                                        long space = h.newSpace();
                                        h.put(
                                                space,
                                                new byte[] {1},
                                                new byte[] {2},
                                                StateCache.NEVER);
                                        assertThat(h.stats().capacity())
                                                .isGreaterThanOrEqualTo(MIB);
                                        // Closed twice from two threads: one removal only.
                                        Thread other = new Thread(h::close);
                                        other.start();
                                        h.close();
                                        other.join();
                                    }
                                    return null;
                                }));
            }
            for (Future<?> run : runs) {
                run.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(registry.liveHandles(type)).isEqualTo(1);
        assertThat(registry.capacity(type)).isEqualTo(MIB);
        assertThat(base.stats().capacity()).isEqualTo(MIB);
        base.close();
    }

    @Test
    void sharedIsOneRegistry() {
        assertThat(StateCacheRegistry.shared()).isSameAs(StateCacheRegistry.shared());
    }
}
