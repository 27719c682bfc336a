package io.taishan.backend.async;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.backend.TaishanOptions;
import io.taishan.kv.server.EmbeddedKvServer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.TreeMap;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.v2.ListState;
import org.apache.flink.api.common.state.v2.ListStateDescriptor;
import org.apache.flink.api.common.state.v2.MapState;
import org.apache.flink.api.common.state.v2.MapStateDescriptor;
import org.apache.flink.api.common.state.v2.ValueState;
import org.apache.flink.api.common.state.v2.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Random asynchronous state requests (value, list and map state; reads, writes, removals, clears,
 * several unchained requests per record) through Flink's execution controller and Taishan's
 * asynchronous backend against a model, with checkpoints and restores in between: every answer is
 * the model's, and the batches' cache misses are read with far fewer remote calls than reads.
 */
class TaishanAsyncStateModelTest {
    private static final int KEY_GROUPS = 16;
    private static final int KEYS = 300;
    private static final int RECORDS_PER_ROUND = 2_000;
    private static final int ROUNDS = 4;

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

    /** The rig and the states the records use. */
    private static final class Operator implements AutoCloseable {
        final AsyncOperatorRig rig;
        final ValueState<Long> count;
        final ListState<Long> sequence;
        final MapState<Long, Long> last;

        Operator(JobID job, String cacheType, Collection<KeyedStateHandle> restored)
                throws Exception {
            Configuration config = new Configuration();
            config.set(TaishanOptions.KV_ADDRESS, server.address());
            config.set(TaishanOptions.CACHE_TYPE, cacheType);
            rig = new AsyncOperatorRig(env, job, KEY_GROUPS, config, 100, restored);
            count = rig.state(new ValueStateDescriptor<>("count", LongSerializer.INSTANCE));
            sequence = rig.state(new ListStateDescriptor<>("sequence", LongSerializer.INSTANCE));
            last =
                    rig.state(
                            new MapStateDescriptor<>(
                                    "last", LongSerializer.INSTANCE, LongSerializer.INSTANCE));
        }

        void record(long key, Runnable body) {
            rig.record(key, body);
        }

        @Override
        public void close() throws Exception {
            rig.close();
        }
    }

    /** The model: per key, count, sequence and the map. */
    private static final class Model {
        final Map<Long, Long> count = new HashMap<>();
        final Map<Long, List<Long>> sequence = new HashMap<>();
        final Map<Long, TreeMap<Long, Long>> last = new HashMap<>();
    }

    @ParameterizedTest(name = "cache={0}")
    @ValueSource(strings = {"none", "off-heap"})
    void randomRequestsAnswerAsTheModelAcrossRestores(String cacheType) throws Exception {
        Random random = new Random(42);
        JobID job = new JobID();
        Model model = new Model();
        List<String> mismatches = new ArrayList<>();
        long reads = 0;
        long fetches = 0;
        Collection<KeyedStateHandle> restored = List.of();
        for (int round = 0; round < ROUNDS; round++) {
            try (Operator op = new Operator(job, cacheType, restored)) {
                for (int r = 0; r < RECORDS_PER_ROUND; r++) {
                    long key = random.nextInt(KEYS);
                    int kind = random.nextInt(6);
                    long value = random.nextInt(1_000);
                    op.record(key, () -> issue(op, model, key, kind, value, mismatches));
                    reads++;
                }
                restored = List.of(op.rig.checkpoint(round + 1));
                fetches += op.rig.readMetrics().batchedFetches();
            }
        }
        try (Operator op = new Operator(job, cacheType, restored)) {
            for (long key = 0; key < KEYS; key++) {
                long k = key;
                op.record(k, () -> checkAll(op, model, k, mismatches));
            }
            op.rig.drain();
        }
        assertThat(mismatches).isEmpty();
        if (cacheType.equals("none")) {
            // Every read misses the (absent) cache: batches must have read them together.
            assertThat(fetches).isPositive().isLessThan(reads / 10);
        }
    }

    /** One record: up to three requests, unchained, so they can share a batch. */
    private static void issue(
            Operator op, Model model, long key, int kind, long value, List<String> mismatches) {
        switch (kind) {
            case 0:
                {
                    // Write then read, unchained: the read must see the write.
                    model.count.put(key, value);
                    op.count.asyncUpdate(value);
                    op.count
                            .asyncValue()
                            .thenAccept(v -> expect(mismatches, "count " + key, value, v));
                    break;
                }
            case 1:
                {
                    Long expected = model.count.get(key);
                    op.count
                            .asyncValue()
                            .thenAccept(v -> expect(mismatches, "count " + key, expected, v));
                    break;
                }
            case 2:
                {
                    model.sequence.computeIfAbsent(key, k -> new ArrayList<>()).add(value);
                    List<Long> expected = new ArrayList<>(model.sequence.get(key));
                    op.sequence.asyncAdd(value);
                    op.sequence
                            .asyncGet()
                            .thenCompose(
                                    it -> {
                                        List<Long> seen = new ArrayList<>();
                                        return it.onNext(
                                                        (Long e) -> {
                                                            seen.add(e);
                                                        })
                                                .thenAccept(
                                                        done ->
                                                                expect(
                                                                        mismatches,
                                                                        "sequence " + key,
                                                                        expected,
                                                                        seen));
                                    });
                    break;
                }
            case 3:
                {
                    long userKey = value % 7;
                    Long before =
                            model.last.computeIfAbsent(key, k -> new TreeMap<>()).get(userKey);
                    model.last.get(key).put(userKey, value);
                    op.last
                            .asyncGet(userKey)
                            .thenAccept(v -> expect(mismatches, "last " + key, before, v));
                    op.last.asyncPut(userKey, value);
                    break;
                }
            case 4:
                {
                    long userKey = value % 7;
                    TreeMap<Long, Long> map = model.last.get(key);
                    boolean had = map != null && map.remove(userKey) != null;
                    op.last
                            .asyncContains(userKey)
                            .thenAccept(c -> expect(mismatches, "contains " + key, had, c));
                    op.last.asyncRemove(userKey);
                    break;
                }
            default:
                {
                    model.count.remove(key);
                    op.count.asyncClear();
                    op.count
                            .asyncValue()
                            .thenAccept(v -> expect(mismatches, "cleared " + key, null, v));
                }
        }
    }

    private static void checkAll(Operator op, Model model, long key, List<String> mismatches) {
        Long count = model.count.get(key);
        op.count.asyncValue().thenAccept(v -> expect(mismatches, "final count " + key, count, v));
        TreeMap<Long, Long> map = model.last.getOrDefault(key, new TreeMap<>());
        for (long userKey = 0; userKey < 7; userKey++) {
            Long expected = map.get(userKey);
            long u = userKey;
            op.last
                    .asyncGet(userKey)
                    .thenAccept(
                            v -> expect(mismatches, "final last " + key + "/" + u, expected, v));
        }
    }

    private static void expect(
            List<String> mismatches, String what, Object expected, Object actual) {
        if (!Objects.equals(expected, actual)) {
            mismatches.add(what + ": expected " + expected + ", got " + actual);
        }
    }
}
