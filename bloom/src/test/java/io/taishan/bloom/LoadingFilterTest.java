package io.taishan.bloom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class LoadingFilterTest {

    private static final FilterGeometry GEOMETRY = FilterSizing.DEFAULT.geometryFor(10_000);

    /** What the server would send: a filter holding {@code [fromId, toId)}. */
    private static BloomFilter fetched(long fromId, long toId) {
        BloomFilter filter = BloomFilter.create(GEOMETRY);
        for (long id = fromId; id < toId; id++) {
            filter.put(Keys.hash(id));
        }
        return filter;
    }

    @Test
    void unloadedAnswersMaybeForEverything() {
        try (LoadingFilter filter = new LoadingFilter()) {
            assertThat(filter.isLoaded()).isFalse();
            assertThat(filter.version()).isEqualTo(LoadingFilter.NO_VERSION);
            for (int id = 0; id < 1000; id++) {
                assertThat(filter.mightContain(Keys.hash(id))).isTrue();
            }
            assertThat(filter.notLoadedAnswers()).isEqualTo(1000);
            assertThat(filter.absentAnswers()).isZero();
            assertThat(filter.offHeapBytes()).isZero();
        }
    }

    @Test
    void writesMadeBeforeTheCopyArrivedAreMergedIntoIt() {
        try (LoadingFilter filter = new LoadingFilter()) {
            LoadingFilter.PendingLoad load = filter.beginLoad();
            // In flight while the server serialized its copy: not in it.
            for (long id = 5_000; id < 5_100; id++) {
                filter.insert(Keys.hash(id));
            }
            assertThat(filter.bufferedHashes()).isEqualTo(100);
            BloomFilter copy = fetched(0, 5_000);
            assertThat(load.complete(copy, 7)).isTrue();
            assertThat(filter.isLoaded()).isTrue();
            assertThat(filter.version()).isEqualTo(7);
            assertThat(filter.bufferedHashes()).isZero();
            assertThat(filter.bufferBytes()).isZero();
            assertThat(filter.offHeapBytes()).isEqualTo(copy.sizeBytes());
            for (long id = 0; id < 5_100; id++) {
                assertThat(filter.mightContain(Keys.hash(id))).as("id %d", id).isTrue();
            }
            // Later writes go straight into the loaded copy.
            filter.insert(Keys.hash(9_999_999));
            assertThat(filter.mightContain(Keys.hash(9_999_999))).isTrue();

            int absent = 0;
            for (long id = 1L << 40; id < (1L << 40) + 10_000; id++) {
                if (!filter.mightContain(Keys.hash(id))) {
                    absent++;
                }
            }
            assertThat(absent).isGreaterThan(9_900);
            assertThat(filter.absentAnswers()).isEqualTo(absent);
            filter.reportFalsePositive();
            assertThat(filter.falsePositives()).isEqualTo(1);
        }
    }

    @Test
    void aLoadThatBeganBeforeAnotherCompletedIsRejected() {
        try (LoadingFilter filter = new LoadingFilter()) {
            LoadingFilter.PendingLoad early = filter.beginLoad();
            LoadingFilter.PendingLoad late = filter.beginLoad();
            assertThat(late.complete(fetched(0, 10), 2)).isTrue();
            LoadingFilter.PendingLoad third = filter.beginLoad();
            filter.insert(Keys.hash(77));
            // early's copy may predate writes that are now only in the loaded copy: drop it.
            BloomFilter stale = fetched(0, 10);
            assertThat(early.complete(stale, 1)).isFalse();
            assertThat(stale.isClosed()).isTrue();
            assertThat(filter.version()).isEqualTo(2);
            assertThat(third.complete(fetched(0, 10), 3)).isTrue();
            assertThat(filter.mightContain(Keys.hash(77))).isTrue();
            assertThat(filter.version()).isEqualTo(3);
        }
    }

    @Test
    void aRefetchKeepsTheOldCopyAnsweringAndFreesItOnceReplaced() {
        try (LoadingFilter filter = new LoadingFilter()) {
            BloomFilter first = fetched(0, 1000);
            assertThat(filter.beginLoad().complete(first, 1)).isTrue();
            LoadingFilter.PendingLoad refetch = filter.beginLoad();
            filter.insert(Keys.hash(123_456));
            assertThat(filter.isLoaded()).isTrue();
            assertThat(filter.mightContain(Keys.hash(123_456))).isTrue();
            assertThat(filter.mightContain(Keys.hash(5))).isTrue();
            assertThat(refetch.complete(fetched(0, 1000), 2)).isTrue();
            assertThat(first.isClosed()).isTrue();
            assertThat(filter.mightContain(Keys.hash(123_456))).isTrue();
        }
    }

    @Test
    void anOverflowingBufferGivesUpAndNeverAnswersWrong() {
        try (LoadingFilter filter = new LoadingFilter(10)) {
            LoadingFilter.PendingLoad load = filter.beginLoad();
            for (int id = 0; id < 11; id++) {
                filter.insert(Keys.hash(id));
            }
            assertThat(filter.bufferOverflows()).isEqualTo(1);
            BloomFilter copy = fetched(100, 200); // lacks ids 0..10
            assertThat(load.complete(copy, 1)).isFalse();
            assertThat(copy.isClosed()).isTrue();
            assertThat(filter.isLoaded()).isFalse();
            for (int id = 0; id < 11; id++) {
                assertThat(filter.mightContain(Keys.hash(id))).isTrue();
            }
            // The next load starts a fresh window (the caller saw ids 0..10 acknowledged).
            LoadingFilter.PendingLoad retry = filter.beginLoad();
            filter.insert(Keys.hash(1_000));
            assertThat(retry.complete(fetched(0, 11), 2)).isTrue();
            assertThat(filter.mightContain(Keys.hash(1_000))).isTrue();

            // During a re-fetch an overflow keeps the old copy, which stays correct.
            LoadingFilter.PendingLoad refetch = filter.beginLoad();
            for (int id = 2_000; id < 2_011; id++) {
                filter.insert(Keys.hash(id));
            }
            assertThat(refetch.complete(fetched(0, 11), 3)).isFalse();
            assertThat(filter.version()).isEqualTo(2);
            for (int id = 2_000; id < 2_011; id++) {
                assertThat(filter.mightContain(Keys.hash(id))).isTrue();
            }
        }
    }

    @Test
    void aZeroBoundBuffersNothingButStillLoadsWhenNothingWasWritten() {
        try (LoadingFilter filter = new LoadingFilter(0)) {
            LoadingFilter.PendingLoad load = filter.beginLoad();
            assertThat(load.complete(fetched(0, 10), 1)).isTrue();
            LoadingFilter.PendingLoad refetch = filter.beginLoad();
            filter.insert(Keys.hash(99));
            assertThat(refetch.complete(fetched(0, 10), 2)).isFalse();
            assertThat(filter.mightContain(Keys.hash(99))).isTrue();
        }
    }

    @Test
    void closeFreesTheCopyAndUseAfterCloseFailsClearly() {
        LoadingFilter filter = new LoadingFilter();
        LoadingFilter.PendingLoad late = filter.beginLoad();
        BloomFilter copy = fetched(0, 10);
        assertThat(filter.beginLoad().complete(copy, 1)).isTrue();
        filter.close();
        filter.close();
        assertThat(copy.isClosed()).isTrue();
        for (Runnable use :
                new Runnable[] {
                    () -> filter.mightContain(1), () -> filter.insert(1), filter::beginLoad
                }) {
            assertThatThrownBy(use::run)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("LoadingFilter is closed");
        }
        BloomFilter afterClose = fetched(0, 10);
        assertThat(late.complete(afterClose, 2)).isFalse();
        assertThat(afterClose.isClosed()).isTrue();
        BloomFilter closed = fetched(0, 1);
        closed.close();
        assertThatThrownBy(() -> late.complete(closed, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("the fetched filter is already closed");
    }

    @Test
    void anEmptyFilterAnswersAbsentAndHoldsNoMemoryUntilItsFirstInsert() {
        try (LoadingFilter filter = LoadingFilter.empty(GEOMETRY, 0)) {
            assertThat(filter.isLoaded()).isTrue();
            assertThat(filter.version()).isZero();
            assertThat(filter.mightContain(Keys.hash(1))).isFalse();
            assertThat(filter.absentAnswers()).isEqualTo(1);
            assertThat(filter.offHeapBytes()).isZero();
            assertThat(filter.bufferBytes()).isZero();
            assertThat(filter.estimatedFpp()).isZero();

            filter.insert(Keys.hash(1));
            assertThat(filter.offHeapBytes()).isGreaterThanOrEqualTo(GEOMETRY.bitsBytes());
            assertThat(filter.mightContain(Keys.hash(1))).isTrue();
            assertThat(filter.bufferBytes()).isZero();
        }
    }

    @Test
    void anEmptyFilterTakesAFetchedCopyWithTheWritesMadeMeanwhile() {
        try (LoadingFilter filter = LoadingFilter.empty(GEOMETRY, 0)) {
            LoadingFilter.PendingLoad load = filter.beginLoad();
            filter.insert(Keys.hash(7));
            assertThat(load.complete(fetched(100, 110), 3)).isTrue();
            assertThat(filter.version()).isEqualTo(3);
            assertThat(filter.mightContain(Keys.hash(7))).isTrue();
            assertThat(filter.mightContain(Keys.hash(105))).isTrue();
        }
        LoadingFilter closed = LoadingFilter.empty(GEOMETRY, 0);
        closed.close();
        assertThatThrownBy(() -> closed.insert(1)).isInstanceOf(IllegalStateException.class);
    }
}
