package io.taishan.backend.async;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.backend.TaishanOptions;
import io.taishan.kv.server.EmbeddedKvServer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.v2.MapState;
import org.apache.flink.api.common.state.v2.MapStateDescriptor;
import org.apache.flink.api.common.state.v2.StateIterator;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.asyncprocessing.AbstractStateIterator;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Iterating a map through the asynchronous API: a large map reaches the operator a bounded page at
 * a time, every entry once and in order, while records of other keys run between the pages.
 */
class MapIterationTest {
    private static final int KEY_GROUPS = 16;
    private static final int LARGE = 5 * PagedStateIterator.PAGE + 17;

    private static EmbeddedKvServer server;
    private static MockEnvironment env;

    @BeforeAll
    static void start() {
        server = EmbeddedKvServer.start();
        env = MockEnvironment.builder().build();
    }

    @AfterAll
    static void stop() throws Exception {
        env.close();
        server.close();
    }

    @ParameterizedTest(name = "cache={0}")
    @ValueSource(strings = {"none", "off-heap"})
    void largeMapsArriveInBoundedPagesWithEveryEntryInOrder(String cacheType) throws Exception {
        Configuration config = new Configuration();
        config.set(TaishanOptions.KV_ADDRESS, server.address());
        config.set(TaishanOptions.CACHE_TYPE, cacheType);
        try (AsyncOperatorRig rig =
                new AsyncOperatorRig(env, new JobID(), KEY_GROUPS, config, 100, List.of())) {
            MapState<Long, Long> map =
                    rig.state(
                            new MapStateDescriptor<>(
                                    "m", LongSerializer.INSTANCE, LongSerializer.INSTANCE));
            // Keys 1 and 2: large maps with different values; key 3: three entries.
            for (long key = 1; key <= 2; key++) {
                long k = key;
                for (long u = 0; u < LARGE; u++) {
                    long userKey = u;
                    rig.record(k, () -> map.asyncPut(userKey, userKey * 10 + k));
                }
            }
            for (long u = 0; u < 3; u++) {
                long userKey = u;
                rig.record(3, () -> map.asyncPut(userKey, userKey));
            }
            rig.checkpoint(1); // the large maps in the store, not only in the write queue

            List<Integer> firstPages = new ArrayList<>();
            List<String> problems = new ArrayList<>();
            AtomicInteger finished = new AtomicInteger();
            for (long key = 1; key <= 2; key++) {
                long k = key;
                rig.record(
                        k,
                        () ->
                                map.asyncEntries()
                                        .thenCompose(
                                                it -> {
                                                    firstPages.add(cached(it));
                                                    List<Long> seen = new ArrayList<>();
                                                    return it.onNext(
                                                                    (Map.Entry<Long, Long> e) -> {
                                                                        if (e.getValue()
                                                                                != e.getKey() * 10
                                                                                        + k) {
                                                                            problems.add(
                                                                                    k + ": " + e);
                                                                        }
                                                                        seen.add(e.getKey());
                                                                    })
                                                            .thenAccept(
                                                                    done -> {
                                                                        check(k, seen, problems);
                                                                        finished.incrementAndGet();
                                                                    });
                                                }));
                // Records of other keys between the pages: each page must still be key k's.
                for (long other = 100; other < 400; other++) {
                    rig.record(other, () -> map.asyncContains(0L));
                }
            }
            List<Long> keys = new ArrayList<>();
            List<Long> values = new ArrayList<>();
            rig.record(
                    1,
                    () ->
                            map.asyncKeys()
                                    .thenCompose(it -> it.onNext((Long u) -> keys.add(u)))
                                    .thenCompose(done -> map.asyncValues())
                                    .thenCompose(it -> it.onNext((Long v) -> values.add(v))));
            List<Long> small = new ArrayList<>();
            rig.record(
                    3,
                    () ->
                            map.asyncKeys()
                                    .thenCompose(
                                            it -> {
                                                firstPages.add(cached(it));
                                                return it.onNext((Long u) -> small.add(u));
                                            }));
            rig.drain();

            assertThat(problems).isEmpty();
            assertThat(finished).hasValue(2);
            assertThat(firstPages)
                    .containsExactlyInAnyOrder(PagedStateIterator.PAGE, PagedStateIterator.PAGE, 3);
            assertThat(keys).hasSize(LARGE).isSorted();
            assertThat(values).hasSize(LARGE).first().isEqualTo(1L);
            assertThat(values).last().isEqualTo((LARGE - 1) * 10L + 1);
            assertThat(small).containsExactly(0L, 1L, 2L);
        }
    }

    /** How many elements the iterator holds before any further loading. */
    private static <T> int cached(StateIterator<T> it) {
        AtomicInteger n = new AtomicInteger();
        if (it instanceof AbstractStateIterator<?> paged) {
            paged.getCurrentCache().forEach(e -> n.incrementAndGet());
        } else {
            // An iterator that never loads holds every element from the start.
            it.onNext(
                    (T e) -> {
                        n.incrementAndGet();
                    });
        }
        return n.get();
    }

    private static void check(long key, List<Long> seen, List<String> problems) {
        if (seen.size() != LARGE) {
            problems.add(key + ": " + seen.size() + " entries, expected " + LARGE);
            return;
        }
        for (int i = 0; i < LARGE; i++) {
            if (seen.get(i) != i) {
                problems.add(key + ": entry " + i + " is user key " + seen.get(i));
                return;
            }
        }
    }
}
