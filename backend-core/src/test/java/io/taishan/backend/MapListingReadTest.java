package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.RunnableFuture;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Small maps are iterated from the read cache once they were read whole, as a SQL join iterates the
 * other side's rows of its key for every record: the second and later iterations of a map with up
 * to 16 entries, or of an empty one, cost no {@code Scan}, and still see every write made in
 * between (puts, removes, removes and updates through the iterator, {@code clear()}). Larger maps
 * are scanned each time. Maps the backend wrote itself are known from their first put, and maps it
 * never wrote are known empty. Each read is checked against a model.
 */
class MapListingReadTest {
    private static final int KEY_GROUPS = 16;
    private static final int KEYS = 600;

    private static final MapStateDescriptor<Integer, Long> MAP =
            new MapStateDescriptor<>("rows", IntSerializer.INSTANCE, LongSerializer.INSTANCE);

    private static EmbeddedKvServer server;
    private static MockEnvironment env;

    private TaishanKeyedStateBackend<Integer> backend;
    private MapState<Integer, Long> state;
    private final Map<Integer, TreeMap<Integer, Long>> model = new HashMap<>();

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

    private final JobID job = new JobID();

    @BeforeEach
    void create() throws Exception {
        open(List.of());
    }

    private void open(List<KeyedStateHandle> restored) throws Exception {
        TaishanStateBackend factory =
                new TaishanStateBackend()
                        .setKvAddress(server.address())
                        .setCacheType("off-heap")
                        .setCacheSize(MemorySize.parse("32mb"));
        backend =
                (TaishanKeyedStateBackend<Integer>)
                        factory.createKeyedStateBackend(
                                new KeyedStateBackendParametersImpl<>(
                                        env,
                                        job,
                                        "join",
                                        IntSerializer.INSTANCE,
                                        KEY_GROUPS,
                                        new KeyGroupRange(0, KEY_GROUPS - 1),
                                        env.getTaskKvStateRegistry(),
                                        TtlTimeProvider.DEFAULT,
                                        new UnregisteredMetricsGroup(),
                                        restored,
                                        new CloseableRegistry()));
        state =
                backend.getPartitionedState(
                        VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, MAP);
    }

    /**
     * A checkpoint, then a new backend restored from it: its maps are the server's, none written by
     * the backend that reads them.
     */
    private void restoreFromCheckpoint() throws Exception {
        RunnableFuture<SnapshotResult<KeyedStateHandle>> future =
                backend.snapshot(
                        1,
                        1,
                        new MemCheckpointStreamFactory(4 << 20),
                        CheckpointOptions.forCheckpointWithDefaultLocation());
        future.run();
        KeyedStateHandle handle = future.get().getJobManagerOwnedSnapshot();
        backend.dispose();
        open(List.of(handle));
    }

    @AfterEach
    void dispose() {
        backend.dispose();
    }

    /** Key k holds k % 5 entries; every 10th key 40, past the listing's bound. */
    private static int sizeOf(int key) {
        return key % 10 == 9 ? 40 : key % 5;
    }

    private void fillAll() throws Exception {
        for (int key = 0; key < KEYS; key++) {
            backend.setCurrentKey(key);
            for (int uk = 0; uk < sizeOf(key); uk++) {
                put(key, uk, (long) key * 1_000 + uk);
            }
        }
    }

    @Test
    void restoredSmallMapsAreIteratedWithoutAScanOnceReadWholeAndFollowEveryWrite()
            throws Exception {
        fillAll();
        restoreFromCheckpoint();
        // iterateAll() reads each map twice (entries, isEmpty): two scans per large map.
        long large = 2L * (KEYS / 10);

        long scans = backend.readMetrics().remoteScans();
        iterateAll();
        assertThat(backend.readMetrics().remoteScans() - scans)
                .as("first iteration: every map is scanned")
                .isGreaterThanOrEqualTo(KEYS);

        scans = backend.readMetrics().remoteScans();
        iterateAll();
        assertThat(backend.readMetrics().remoteScans() - scans)
                .as("second iteration: only the maps past the bound are scanned")
                .isEqualTo(large);

        // Writes of every kind between iterations: the listings follow them.
        for (int key = 0; key < KEYS; key++) {
            backend.setCurrentKey(key);
            put(key, 100 + key % 3, -key);
            if (key % 4 == 0) {
                state.remove(0);
                model.get(key).remove(0);
            }
            Iterator<Map.Entry<Integer, Long>> it = state.iterator();
            while (it.hasNext()) {
                Map.Entry<Integer, Long> e = it.next();
                if (e.getKey() == 1) {
                    it.remove();
                    model.get(key).remove(1);
                } else if (e.getKey() == 2) {
                    e.setValue(7L);
                    model.get(key).put(2, 7L);
                }
            }
            if (key % 7 == 0) {
                state.clear();
                model.get(key).clear();
            }
        }
        scans = backend.readMetrics().remoteScans();
        iterateAll();
        assertThat(backend.readMetrics().remoteScans() - scans)
                .as("after the writes: still only the maps past the bound are scanned")
                .isEqualTo(2L * count(key -> sizeOf(key) > 16 && key % 7 != 0));
        assertThat(backend.readMetrics().mapListingHits()).isPositive();
    }

    /**
     * In shards that started empty the backend knows every map it wrote: a map it never wrote is
     * empty, and one it did is listed from its first put, so even the first iteration scans only
     * the maps past the listing's bound.
     */
    @Test
    void mapsOfAFreshBackendAreKnownFromTheirFirstPut() throws Exception {
        fillAll();
        long large = 2L * (KEYS / 10);
        long emptyMaps = count(key -> sizeOf(key) == 0);
        long scans = backend.readMetrics().remoteScans();
        iterateAll();
        assertThat(backend.readMetrics().remoteScans() - scans)
                .as("first iteration: only the maps past the bound are scanned")
                .isEqualTo(large);
        assertThat(backend.readMetrics().mapPrefixAbsentAnswers())
                .as("maps never written, iterated and asked isEmpty(): answered by their prefix")
                .isEqualTo(2 * emptyMaps);

        // A map emptied by removes, and one cleared, are no longer unknown: still exact.
        backend.setCurrentKey(1);
        state.remove(0);
        model.get(1).remove(0);
        backend.setCurrentKey(2);
        state.clear();
        model.get(2).clear();
        backend.setCurrentKey(10);
        put(10, 5, 55L);
        iterateAll();
        assertThat(backend.readMetrics().remoteScans() - scans).isEqualTo(2 * large);
    }

    @Test
    void aClearedMapIsKnownEmptyAndGrowsPastTheBoundIntoScans() throws Exception {
        backend.setCurrentKey(3);
        for (int uk = 0; uk < 5; uk++) {
            put(3, uk, uk);
        }
        state.clear();
        model.get(3).clear();
        long scans = backend.readMetrics().remoteScans();
        assertThat(state.isEmpty()).isTrue();
        assertThat(state.entries()).isEmpty();
        assertThat(state.contains(2)).isFalse();
        assertThat(backend.readMetrics().remoteScans() - scans).isZero();

        for (int uk = 0; uk < 16; uk++) {
            put(3, uk, -uk);
            assertThat(entries()).isEqualTo(model.get(3));
        }
        assertThat(backend.readMetrics().remoteScans() - scans)
                .as("16 entries still listed")
                .isZero();
        put(3, 16, -16L);
        assertThat(entries()).isEqualTo(model.get(3));
        assertThat(backend.readMetrics().remoteScans() - scans)
                .as("the 17th entry drops the listing")
                .isPositive();
        state.remove(16);
        model.get(3).remove(16);
        assertThat(entries()).isEqualTo(model.get(3));
        assertThat(state.get(5)).isEqualTo(-5L);
        assertThat(state.get(99)).isNull();
    }

    private static long count(java.util.function.IntPredicate keys) {
        return java.util.stream.IntStream.range(0, KEYS).filter(keys).count();
    }

    private void put(int key, int userKey, long value) throws Exception {
        state.put(userKey, value);
        model.computeIfAbsent(key, k -> new TreeMap<>()).put(userKey, value);
    }

    private TreeMap<Integer, Long> entries() throws Exception {
        TreeMap<Integer, Long> seen = new TreeMap<>();
        for (Map.Entry<Integer, Long> e : state.entries()) {
            seen.put(e.getKey(), e.getValue());
        }
        return seen;
    }

    private void iterateAll() throws Exception {
        List<Integer> wrong = new ArrayList<>();
        for (int key = 0; key < KEYS; key++) {
            backend.setCurrentKey(key);
            TreeMap<Integer, Long> expected = model.getOrDefault(key, new TreeMap<>());
            if (!entries().equals(expected) || state.isEmpty() != expected.isEmpty()) {
                wrong.add(key);
            }
        }
        assertThat(wrong).as("keys whose map iterated wrong").isEmpty();
    }
}
