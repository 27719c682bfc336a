package io.taishan.bloom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class RebuildingFilterTest {

    private static final FilterSizing SIZING = FilterSizing.DEFAULT;

    @Test
    void aFreshShardStartsAtTheFloorAndComplete() {
        try (RebuildingFilter shard = RebuildingFilter.createEmpty(SIZING)) {
            assertThat(shard.geometry()).isEqualTo(SIZING.geometryFor(SIZING.minKeys()));
            assertThat(shard.version()).isZero();
            assertThat(shard.needsRebuild()).isFalse();
            assertThat(shard.mightContain(Keys.hash(1))).isFalse();
            shard.insert(Keys.hash(1));
            assertThat(shard.mightContain(Keys.hash(1))).isTrue();
            assertThat(shard.insertsSinceBuild()).isEqualTo(1);
        }
    }

    @Test
    void newDistinctKeysTriggerARebuildAndOverwritesDoNot() {
        try (RebuildingFilter shard = RebuildingFilter.createEmpty(SIZING)) {
            for (int round = 0; round < 50; round++) {
                for (int id = 0; id < 500; id++) {
                    shard.insert(Keys.hash(id)); // the same 500 keys, updated over and over
                }
            }
            assertThat(shard.insertsSinceBuild()).isEqualTo(25_000);
            assertThat(shard.needsRebuild()).isFalse();
            int id = 500;
            while (!shard.needsRebuild()) {
                shard.insert(Keys.hash(id++));
            }
            // Half the 1% target in a filter of capacity ~1024: about 85% of it.
            assertThat(id).isBetween(800, 950);
            assertThat(shard.estimatedFpp()).isBetween(0.004, 0.006);
        }
    }

    @Test
    void aRebuildDropsDeletedKeysAndKeepsEverythingInsertedWhileItRan() {
        try (RebuildingFilter shard = RebuildingFilter.createEmpty(SIZING)) {
            for (int id = 0; id < 20_000; id++) {
                shard.insert(Keys.hash(id));
            }
            // The floor-sized filter is overfull: deleted keys are nearly all false positives.
            assertThat(fpRate(shard, 1_000, 20_000)).isGreaterThan(0.5);

            // Ids 0..999 stay live; 1000..19999 were deleted (the filter is not told).
            RebuildingFilter.Rebuild rebuild = shard.beginRebuild(1_000);
            assertThat(shard.isRebuilding()).isTrue();
            assertThat(shard.needsRebuild()).isFalse();
            for (int id = 0; id < 500; id++) {
                rebuild.add(Keys.hash(id));
            }
            shard.insert(Keys.hash(50_000)); // written while the scan runs, not in its snapshot
            long[] rest = new long[500];
            for (int i = 0; i < 500; i++) {
                rest[i] = Keys.hash(500 + i);
            }
            rebuild.addAll(rest, 0, rest.length);
            assertThat(rebuild.keysScanned()).isEqualTo(1_000);
            assertThat(shard.sizeBytes())
                    .isEqualTo(
                            SIZING.geometryForLiveKeys(0).bitsBytes()
                                    + rebuild.geometry().bitsBytes()
                                    + 2 * 64);

            assertThat(rebuild.finish()).isEqualTo(1);
            assertThat(shard.version()).isEqualTo(1);
            assertThat(shard.isRebuilding()).isFalse();
            assertThat(shard.liveKeysAtBuild()).isEqualTo(1_000);
            assertThat(shard.insertsSinceBuild()).isEqualTo(1);
            assertThat(shard.geometry()).isEqualTo(SIZING.geometryForLiveKeys(1_000));
            for (int id = 0; id < 1_000; id++) {
                assertThat(shard.mightContain(Keys.hash(id))).isTrue();
            }
            assertThat(shard.mightContain(Keys.hash(50_000))).isTrue();
            assertThat(fpRate(shard, 1_000, 19_000)).isLessThan(0.01);
            assertThat(shard.needsRebuild()).isFalse();
        }
    }

    @Test
    void anUnderestimateUnderSizesAtMostOneBuild() {
        try (RebuildingFilter shard = RebuildingFilter.createEmpty(SIZING)) {
            RebuildingFilter.Rebuild first = shard.beginRebuild(0); // the store said "empty"
            for (int id = 0; id < 10_000; id++) {
                shard.insert(Keys.hash(id));
            }
            for (int id = 0; id < 10_000; id++) {
                first.add(Keys.hash(id));
            }
            first.finish();
            assertThat(shard.geometry()).isEqualTo(SIZING.geometryForLiveKeys(0));
            assertThat(shard.liveKeysAtBuild()).isEqualTo(10_000);
            RebuildingFilter.Rebuild second = shard.beginRebuild(0); // wrong again
            assertThat(second.geometry()).isEqualTo(SIZING.geometryForLiveKeys(10_000));
            for (int id = 0; id < 10_000; id++) {
                second.add(Keys.hash(id));
            }
            second.finish();
            assertThat(shard.estimatedFpp()).isLessThan(SIZING.targetFpp() / 2);
        }
    }

    @Test
    void abortKeepsTheCurrentFilterAndFreesTheNewOne() {
        try (RebuildingFilter shard = RebuildingFilter.createEmpty(SIZING)) {
            shard.insert(Keys.hash(1));
            long before = BloomFilterTest.directMemoryUsed();
            RebuildingFilter.Rebuild rebuild = shard.beginRebuild(1_000_000);
            assertThat(BloomFilterTest.directMemoryUsed() - before)
                    .isEqualTo(rebuild.geometry().bitsBytes() + 64);
            assertThatThrownBy(() -> shard.beginRebuild(10))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("a rebuild is already running (version 0)");
            rebuild.add(Keys.hash(2));
            rebuild.abort();
            rebuild.abort();
            assertThat(BloomFilterTest.directMemoryUsed() - before).isZero();
            assertThat(shard.version()).isZero();
            assertThat(shard.mightContain(Keys.hash(1))).isTrue();
            assertThatThrownBy(() -> rebuild.add(3))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("this rebuild was aborted or has finished");
            assertThatThrownBy(rebuild::finish).isInstanceOf(IllegalStateException.class);

            // try-with-resources aborts a scan that failed, and is a no-op after finish.
            try (RebuildingFilter.Rebuild next = shard.beginRebuild(10)) {
                next.add(Keys.hash(1));
                next.finish();
            }
            assertThat(shard.version()).isEqualTo(1);
            try (RebuildingFilter.Rebuild failing = shard.beginRebuild(10)) {
                failing.add(Keys.hash(1));
            }
            assertThat(shard.isRebuilding()).isFalse();
            assertThat(shard.version()).isEqualTo(1);
        }
    }

    @Test
    void snapshotRoundTripsWithVersionAndCounters() throws IOException {
        byte[] bytes;
        BloomFilter expected;
        try (RebuildingFilter shard = RebuildingFilter.createEmpty(SIZING)) {
            for (int id = 0; id < 3_000; id++) {
                shard.insert(Keys.hash(id));
            }
            try (RebuildingFilter.Rebuild rebuild = shard.beginRebuild(3_000)) {
                for (int id = 0; id < 3_000; id++) {
                    rebuild.add(Keys.hash(id));
                }
                rebuild.finish();
            }
            for (int id = 3_000; id < 3_100; id++) {
                shard.insert(Keys.hash(id));
            }
            try (RebuildingFilter.Snapshot snapshot = shard.snapshot()) {
                assertThat(snapshot.version()).isEqualTo(1);
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                snapshot.writeTo(out);
                bytes = out.toByteArray();
                assertThat(bytes).hasSize((int) snapshot.serializedSizeBytes());
                expected = snapshot.filter().copy();
            }
            ByteArrayOutputStream direct = new ByteArrayOutputStream();
            shard.writeTo(direct);
            assertThat(direct.toByteArray()).isEqualTo(bytes);
        }
        try (expected;
                RebuildingFilter restored =
                        RebuildingFilter.readFrom(SIZING, new ByteArrayInputStream(bytes))) {
            assertThat(restored.version()).isEqualTo(1);
            assertThat(restored.insertsSinceBuild()).isEqualTo(100);
            assertThat(restored.liveKeysAtBuild()).isEqualTo(3_000);
            assertThat(restored.geometry()).isEqualTo(expected.geometry());
            for (int id = 0; id < 3_100; id++) {
                assertThat(restored.mightContain(Keys.hash(id))).isTrue();
            }
            try (RebuildingFilter.Snapshot again = restored.snapshot()) {
                assertThat(again.filter().toByteArray()).isEqualTo(expected.toByteArray());
            }
        }
    }

    @Test
    void corruptOrForeignSnapshotsFailClearly() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (RebuildingFilter shard = RebuildingFilter.createEmpty(SIZING)) {
            shard.insert(Keys.hash(7));
            shard.writeTo(out);
        }
        byte[] good = out.toByteArray();
        assertThatThrownBy(() -> read(flip(good, 0)))
                .isInstanceOf(FilterFormatException.class)
                .hasMessageStartingWith("not a Taishan shard filter: magic d4535246");
        byte[] future = good.clone();
        future[5] = 9;
        assertThatThrownBy(() -> read(future))
                .isInstanceOf(FilterFormatException.class)
                .hasMessage(
                        "unsupported shard filter format version 9; this build reads version 1");
        for (int headerByte : new int[] {8, 15, 16, 31, 39, 40, 43}) {
            assertThatThrownBy(() -> read(flip(good, headerByte)))
                    .as("header byte %d", headerByte)
                    .isInstanceOf(FilterFormatException.class)
                    .hasMessageStartingWith("corrupt shard filter header");
        }
        assertThatThrownBy(() -> read(flip(good, good.length - 10)))
                .isInstanceOf(FilterFormatException.class)
                .hasMessageStartingWith("corrupt Bloom filter: checksum of the bits");
        assertThatThrownBy(() -> read(Arrays.copyOf(good, 20)))
                .isInstanceOf(FilterFormatException.class)
                .hasMessageStartingWith("truncated shard filter");
        assertThatThrownBy(() -> read(Arrays.copyOf(good, good.length - 1)))
                .isInstanceOf(FilterFormatException.class)
                .hasMessageStartingWith("truncated Bloom filter");
        byte[] bare;
        try (BloomFilter filter = BloomFilter.create(SIZING.geometryFor(10))) {
            bare = filter.toByteArray();
        }
        assertThatThrownBy(() -> read(bare))
                .isInstanceOf(FilterFormatException.class)
                .hasMessageStartingWith("not a Taishan shard filter: magic 54534246");
        // ...and the other way round: a shard snapshot is not a bare filter.
        assertThatThrownBy(() -> BloomFilter.fromBytes(good))
                .isInstanceOf(FilterFormatException.class)
                .hasMessageStartingWith("not a Taishan Bloom filter: magic 54535246");
    }

    @Test
    void useAfterCloseFailsClearlyAndCloseFreesBothFilters() {
        long before = BloomFilterTest.directMemoryUsed();
        RebuildingFilter shard = RebuildingFilter.createEmpty(SIZING);
        RebuildingFilter.Rebuild rebuild = shard.beginRebuild(100_000);
        shard.close();
        shard.close();
        assertThat(BloomFilterTest.directMemoryUsed() - before).isZero();
        assertThat(shard.sizeBytes()).isZero();
        for (Runnable use :
                new Runnable[] {
                    () -> shard.insert(1),
                    () -> shard.mightContain(1),
                    shard::needsRebuild,
                    shard::snapshot,
                    () -> shard.beginRebuild(1),
                    () -> rebuild.add(1),
                    rebuild::finish
                }) {
            assertThatThrownBy(use::run)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("RebuildingFilter is closed");
        }
        rebuild.abort(); // nothing left to free
    }

    private static RebuildingFilter read(byte[] bytes) throws IOException {
        return RebuildingFilter.readFrom(SIZING, new ByteArrayInputStream(bytes));
    }

    private static double fpRate(RebuildingFilter shard, long firstId, int count) {
        int hits = 0;
        for (int i = 0; i < count; i++) {
            if (shard.mightContain(Keys.hash(firstId + i))) {
                hits++;
            }
        }
        return (double) hits / count;
    }

    private static byte[] flip(byte[] bytes, int index) {
        byte[] copy = bytes.clone();
        copy[index] ^= (byte) 0x80;
        return copy;
    }
}
