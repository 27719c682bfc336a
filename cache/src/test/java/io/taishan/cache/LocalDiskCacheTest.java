package io.taishan.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a user of the local disk tier relies on: bounded disk, recency, a private directory. */
class LocalDiskCacheTest {
    private static final long NOW = 1_700_000_000_000L;
    private static final long MAX_BYTES = 8L << 20;

    @TempDir Path base;

    private final ManualClock clock = new ManualClock(NOW);

    private LocalDiskCache open(long maxBytes) {
        return new LocalDiskCache(new LocalDiskCache.Spec(base.toString(), maxBytes), clock);
    }

    private static byte[] key(int i) {
        return new byte[] {'k', (byte) (i >>> 24), (byte) (i >>> 16), (byte) (i >>> 8), (byte) i};
    }

    private static byte[] value(int i, int length) {
        byte[] v = new byte[length];
        for (int j = 0; j < length; j++) {
            v[j] = (byte) (i * 31 + j);
        }
        return v;
    }

    @Test
    void theDiskAnswersWhatMemoryEvicted() {
        LocalDiskCache disk = open(MAX_BYTES);
        // A memory tier of 16 KiB for 1 MiB of values.
        TieredStateCache cache = new TieredStateCache(new OnHeapStateCache(16 << 10, clock), disk);
        try {
            long space = cache.newSpace();
            for (int i = 0; i < 1000; i++) {
                cache.put(space, key(i), value(i, 1000), StateCache.NEVER);
            }
            cache.putAbsent(space, key(-1), StateCache.NEVER);
            for (int i = 0; i < 1000; i++) {
                assertThat(cache.get(space, key(i))).as("key %d", i).isEqualTo(value(i, 1000));
            }
            assertThat(cache.get(space, key(-1))).isSameAs(StateCache.ABSENT);
            assertThat(cache.get(space, key(-2))).isNull();
            // An update reads memory only, and leaves no older entry on disk.
            assertThat(cache.getForUpdate(space, key(0))).as("evicted from memory").isNull();
            assertThat(cache.get(space, key(0))).as("and dropped from the disk").isNull();
            cache.put(space, key(5000), value(5000, 10), StateCache.NEVER);
            assertThat(cache.getForUpdate(space, key(5000))).isEqualTo(value(5000, 10));
            CacheStats local = cache.localStats().orElseThrow();
            assertThat(local.hits()).isGreaterThan(900);
            assertThat(local.misses()).isEqualTo(2);
            assertThat(cache.stats().evictions()).as("memory evictions").isGreaterThan(900);
        } finally {
            cache.close();
        }
    }

    @Test
    void entriesInUseOutliveFarMoreWritesThanTheTierHolds_andDiskStaysWithinItsSize()
            throws Exception {
        try (LocalDiskCache disk = open(MAX_BYTES)) {
            long space = 1;
            for (int hot = 0; hot < 100; hot++) {
                disk.put(space, key(hot), value(hot, 500), StateCache.NEVER);
            }
            // Five times the tier's size of cold writes, the hot keys read all along.
            long peakBytes = 0;
            for (int i = 100; i < 100 + 5 * (int) (MAX_BYTES / 1000); i++) {
                disk.put(space, key(i), value(i, 1000), StateCache.NEVER);
                if (i % 500 == 0) {
                    for (int hot = 0; hot < 100; hot++) {
                        assertThat(disk.get(space, key(hot)))
                                .as("hot key %d", hot)
                                .isNotNull()
                                .extracting(LocalDiskCache.Hit::value)
                                .isEqualTo(value(hot, 500));
                    }
                    peakBytes = Math.max(peakBytes, directoryBytes(disk.directory()));
                }
            }
            disk.awaitFlushes();
            assertThat(disk.get(space, key(100))).as("the oldest cold key").isNull();
            CacheStats stats = disk.stats();
            assertThat(stats.evictions()).isGreaterThan(10_000);
            assertThat(stats.capacity()).isEqualTo(MAX_BYTES);
            System.out.println("PEAK " + peakBytes + " used " + stats.bytesUsed());
            assertThat(peakBytes).isLessThan(MAX_BYTES + MAX_BYTES / 4 + (1 << 20));
            assertThat(stats.bytesUsed()).isLessThan(MAX_BYTES + MAX_BYTES / 4 + (1 << 20));
        }
    }

    @Test
    void aTierOfManyMemtablesMergesItsSegments_andNoGetEverSeesAnOlderEntry()
            throws InterruptedException {
        // 64 MiB of disk in memtables of 16 KiB: about a thousand segments without merges.
        LocalDiskCache disk =
                new LocalDiskCache(
                        new LocalDiskCache.Spec(base.toString(), 64L << 20), clock, 16 << 10);
        try {
            long space = 1;
            Random random = new Random(7);
            Map<Integer, byte[]> model = new HashMap<>(); // a null value: invalidated
            long racedMisses = 0;
            for (int op = 0; op < 100_000; op++) {
                int k = random.nextInt(10_000);
                int choice = random.nextInt(10);
                if (choice == 0) {
                    disk.invalidate(space, key(k));
                    model.put(k, null);
                } else if (choice < 4) {
                    // Reads while segments are merged on the merge thread.
                    LocalDiskCache.Hit hit = disk.get(space, key(k));
                    if (hit != null) {
                        assertThat(hit.value())
                                .as("key %d after op %d", k, op)
                                .isEqualTo(model.get(k));
                    } else if (model.get(k) != null) {
                        racedMisses++;
                    }
                } else {
                    byte[] v = value(op, 40);
                    disk.put(space, key(k), v, StateCache.NEVER);
                    model.put(k, v);
                }
            }
            disk.awaitFlushesAndMerges();
            assertThat(disk.merges()).isPositive();
            assertThat(disk.segmentCount())
                    .isLessThanOrEqualTo(
                            LocalDiskCache.MEMTABLE_SHARE + LocalDiskCache.MERGE_WIDTH);
            assertThat(disk.stats().evictions()).as("nothing evicted from 64 MiB").isZero();
            // A miss while a merged run was deleted under a get is allowed, and rare.
            assertThat(racedMisses).isLessThan(100);
            for (Map.Entry<Integer, byte[]> e : model.entrySet()) {
                LocalDiskCache.Hit hit = disk.get(space, key(e.getKey()));
                if (e.getValue() == null) {
                    assertThat(hit).as("invalidated key %d", e.getKey()).isNull();
                } else {
                    assertThat(hit).as("key %d", e.getKey()).isNotNull();
                    assertThat(hit.value()).as("key %d", e.getKey()).isEqualTo(e.getValue());
                }
            }
        } finally {
            disk.close();
        }
    }

    @Test
    void anInvalidationOrAnExpiryHidesWhatAnOlderSegmentHolds() throws InterruptedException {
        try (LocalDiskCache disk = open(LocalDiskCache.MIN_BYTES)) {
            disk.put(1, key(1), value(1, 10), StateCache.NEVER);
            disk.put(1, key(2), value(2, 10), StateCache.NEVER);
            disk.put(1, key(3), value(3, 10), NOW + 100);
            // Past a memtable of other writes: the three now sit in a segment.
            for (int i = 10; i < 200; i++) {
                disk.put(2, key(i), value(i, 1000), StateCache.NEVER);
            }
            disk.awaitFlushes();
            assertThat(disk.stats().bytesUsed()).isPositive();
            disk.invalidate(1, key(1));
            disk.put(1, key(2), value(2, 10), NOW + 50);
            clock.advance(60);
            assertThat(disk.get(1, key(1))).isNull();
            assertThat(disk.get(1, key(2))).as("the newer entry expired").isNull();
            assertThat(disk.get(1, key(3))).isNotNull();
            clock.advance(50);
            assertThat(disk.get(1, key(3))).isNull();
            assertThat(disk.get(1, key(2))).isNull();
            assertThat(disk.stats().expirations()).isEqualTo(3);
            // Too large for the tier: any older value is dropped, nothing kept.
            disk.put(1, key(4), value(4, 10), StateCache.NEVER);
            disk.put(1, key(4), new byte[LocalDiskCache.MAX_VALUE_BYTES + 1], StateCache.NEVER);
            assertThat(disk.get(1, key(4))).isNull();
        }
    }

    @Test
    void aSegmentThatCannotBeWrittenEmptiesTheTierSoNoOlderValueSurfaces() throws Exception {
        try (LocalDiskCache disk = open(LocalDiskCache.MIN_BYTES)) {
            disk.put(1, key(1), value(1, 10), StateCache.NEVER);
            fillAMemtable(disk);
            disk.awaitFlushes();
            assertThat(disk.get(1, key(1))).isNotNull();
            // The disk goes: the next segment cannot be written.
            try (Stream<Path> files = Files.list(disk.directory())) {
                for (Path f : files.toList()) {
                    Files.delete(f);
                }
            }
            Files.delete(disk.directory());
            disk.put(1, key(1), value(2, 10), StateCache.NEVER);
            fillAMemtable(disk);
            disk.awaitFlushes();
            assertThat(disk.flushFailures()).isPositive();
            assertThat(disk.get(1, key(1))).as("neither the lost value nor the older one").isNull();
            assertThat(disk.stats().bytesUsed()).isZero();
        }
    }

    private static void fillAMemtable(LocalDiskCache disk) {
        for (int i = 0; i < 100; i++) {
            disk.put(2, key(i), value(i, 1000), StateCache.NEVER);
        }
    }

    @Test
    void eachTierWorksInADirectoryOfItsOwnThatItsCloseDeletes() throws IOException {
        LocalDiskCache first = open(MAX_BYTES);
        LocalDiskCache second = open(MAX_BYTES);
        try {
            assertThat(first.directory()).isNotEqualTo(second.directory());
            assertThat(first.directory().getParent()).isEqualTo(base.toAbsolutePath());
            first.put(1, key(1), value(1, 10), StateCache.NEVER);
            assertThat(second.get(1, key(1))).isNull();
        } finally {
            first.close();
        }
        assertThat(first.directory()).doesNotExist();
        assertThat(second.directory()).exists();
        second.close();
        try (Stream<Path> left = Files.list(base)) {
            assertThat(left).isEmpty();
        }
    }

    @Test
    void aDirectoryLeftByAProcessThatDiedIsRemovedAndALiveOneKept() throws IOException {
        // A dead process's tier: its lock file is there, but nobody holds the lock.
        Path abandoned = Files.createDirectory(base.resolve("taishan-cache-dead"));
        Files.createFile(abandoned.resolve("lock"));
        Files.write(abandoned.resolve("segment-0.mv"), new byte[4096]);
        Path unrelated = Files.createDirectory(base.resolve("someone-elses"));
        try (LocalDiskCache live = open(MAX_BYTES);
                LocalDiskCache next = open(MAX_BYTES)) {
            assertThat(abandoned).doesNotExist();
            assertThat(unrelated).exists();
            assertThat(live.directory()).exists();
            assertThat(next.directory()).exists();
        }
    }

    @Test
    void badSettingsFailWithTheirCause() throws IOException {
        assertThatThrownBy(() -> new LocalDiskCache.Spec(" ", MAX_BYTES))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("directory is empty");
        assertThatThrownBy(() -> new LocalDiskCache.Spec(base.toString(), 1 << 20))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least 4 MiB");
        Path file = Files.createFile(base.resolve("a-file"));
        assertThatThrownBy(
                        () ->
                                new LocalDiskCache(
                                        new LocalDiskCache.Spec(file.toString(), MAX_BYTES), clock))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("taishan.cache.local-dir");
    }

    @Test
    void theRegistrySharesOneTierPerSpecAndDeletesItWithTheLastHandle() {
        StateCacheRegistry registry = new StateCacheRegistry();
        LocalDiskCache.Spec spec = new LocalDiskCache.Spec(base.toString(), MAX_BYTES);
        StateCacheHandle a = registry.acquire(CacheType.OFF_HEAP, 1 << 20, spec);
        StateCacheHandle b = registry.acquire(CacheType.OFF_HEAP, 1 << 20, spec);
        StateCacheHandle memoryOnly = registry.acquire(CacheType.OFF_HEAP, 1 << 20);
        Path dir = ((TieredStateCache) a.cache()).disk().directory();
        assertThat(b.cache()).isSameAs(a.cache());
        assertThat(memoryOnly.cache()).isNotSameAs(a.cache());
        assertThat(memoryOnly.localStats()).isEmpty();
        assertThat(a.localStats().orElseThrow().capacity()).isEqualTo(MAX_BYTES);
        assertThat(a.stats().capacity()).isEqualTo(2 << 20);
        assertThat(registry.capacity(CacheType.OFF_HEAP)).isEqualTo(3 << 20);
        a.close();
        assertThat(dir).exists();
        b.close();
        assertThat(dir).doesNotExist();
        memoryOnly.close();
        assertThat(registry.liveHandles(CacheType.OFF_HEAP)).isZero();
    }

    private static long directoryBytes(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.mapToLong(
                            p -> {
                                try {
                                    return Files.size(p);
                                } catch (IOException e) {
                                    return 0; // dropped meanwhile
                                }
                            })
                    .sum();
        }
    }
}
