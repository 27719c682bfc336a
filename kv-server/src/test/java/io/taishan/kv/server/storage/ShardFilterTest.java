package io.taishan.kv.server.storage;

import static io.taishan.kv.server.storage.Ops.append;
import static io.taishan.kv.server.storage.Ops.delete;
import static io.taishan.kv.server.storage.Ops.deleteRange;
import static io.taishan.kv.server.storage.Ops.marker;
import static io.taishan.kv.server.storage.Ops.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.taishan.bloom.KeyHash;
import io.taishan.bloom.RebuildingFilter;
import io.taishan.kv.proto.ErrorCode;
import io.taishan.kv.proto.WriteOp;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kv-server's side of the Bloom filters, on real RocksDB: inserted on apply, cut with each
 * snapshot, loaded by restore and clone, saved at a clean close and invalidated by the next write,
 * rebuilt (under concurrent writes) when there is none to trust or it got imprecise, and bounded in
 * memory. "Present" below is the filter a client would fetch ({@link Shard#copyFilter}).
 */
class ShardFilterTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir Path dir;

    private StorageEngine engine;
    private TableStore table;

    private void start(FilterOptions filters) {
        engine = StorageEngine.open(Ops.smallOptions(dir).withFilters(filters));
        if (engine.table("t").isEmpty()) {
            engine.createTable("t", 4, false);
        }
        table = engine.tableStore("t");
    }

    private void start() {
        start(FilterOptions.DEFAULTS.withMaxMemoryBytes(64L << 20));
    }

    private void restart() {
        engine.close();
        start();
    }

    @AfterEach
    void tearDown() {
        if (engine != null) {
            engine.filters().scanHook = (s, k) -> {};
            engine.close();
        }
    }

    // ---- what the shard knows, as a client would fetch it

    private static List<SnapshotMeta> write(Shard shard, long epoch, WriteOp... ops) {
        return shard.write(epoch, List.of(ops));
    }

    private static void putAll(Shard shard, long epoch, List<String> keys) {
        for (int from = 0; from < keys.size(); from += 1000) {
            List<WriteOp> ops = new ArrayList<>();
            for (String key : keys.subList(from, Math.min(keys.size(), from + 1000))) {
                ops.add(put(key, "v"));
            }
            shard.write(epoch, ops);
        }
    }

    private static List<String> keys(String prefix, int count) {
        List<String> keys = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            keys.add(String.format("%s%07d", prefix, i));
        }
        return keys;
    }

    private static long hash(String key) {
        return KeyHash.hash(key.getBytes(StandardCharsets.UTF_8));
    }

    /** The keys the fetched filter answers "surely absent" for. */
    private static List<String> absent(Shard shard, long epoch, List<String> keys) {
        try (FilterCopy copy = shard.copyFilter(epoch)) {
            return absent(copy.snapshot().filter()::mightContain, keys);
        }
    }

    private interface Lookup {
        boolean mightContain(long hash);
    }

    private static List<String> absent(Lookup filter, List<String> keys) {
        List<String> result = new ArrayList<>();
        for (String key : keys) {
            if (!filter.mightContain(hash(key))) {
                result.add(key);
            }
        }
        return result;
    }

    private static long version(Shard shard, long epoch) {
        try (FilterCopy copy = shard.copyFilter(epoch)) {
            return copy.version();
        }
    }

    private static void assertUnavailable(Shard shard, long epoch, String reason) {
        assertThatThrownBy(() -> shard.copyFilter(epoch).close())
                .isInstanceOfSatisfying(
                        KvServerException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.FILTER_UNAVAILABLE))
                .hasMessageContaining(shard.toString())
                .hasMessageContaining("epoch " + epoch)
                .hasMessageContaining(reason);
    }

    /** Polls (no timing assertion): what a client does after FILTER_UNAVAILABLE. */
    private static void await(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - deadline).as("waiting for " + what).isNegative();
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    private static void awaitAvailable(Shard shard, long epoch) {
        await(
                shard + " to have a filter",
                () -> shard.filterStatus().state() == FilterStatus.State.AVAILABLE);
    }

    private void awaitNoRebuild(Shard shard) {
        await(
                "the rebuilds of " + shard + " to end",
                () ->
                        engine.filterRebuildsPending() == 0
                                && !shard.filterStatus().rebuildRunning()
                                && !shard.filterStatus().rebuildQueued());
    }

    /** Closes every open shard, once the rebuilds that keep one open have ended. */
    private void closeIdle() {
        await(
                "rebuilds to end",
                () -> {
                    engine.closeAllIdleStores();
                    return engine.openStoreCount() == 0;
                });
    }

    /** The filters a clean close saved for the shard's store (one file for all its shards). */
    private Path liveFilters(int shard) {
        return table.shard(shard).store().liveDir().resolve(FilterBundle.LIVE_FILE_NAME);
    }

    private boolean savedAtClose(int shard) throws IOException {
        Path bundle = liveFilters(shard);
        if (!Files.exists(bundle)) {
            return false;
        }
        try (FilterBundle.Reader saved = FilterBundle.open(bundle)) {
            return saved.contains(shard);
        }
    }

    /** The filter kept with the shard's snapshot {@code id}, or null if the cut holds none. */
    private RebuildingFilter snapshotFilter(int shard, long id) throws IOException {
        SnapshotCatalog catalog = table.catalog();
        StoreCut cut = catalog.cut(catalog.cutIdOf(shard, id));
        long holder = cut.filterHolder(shard);
        if (holder < 0) {
            return null;
        }
        Path bundle = catalog.cutDir(holder).resolve(FilterBundle.CUT_FILE_NAME);
        try (FilterBundle.Reader saved = FilterBundle.open(bundle)) {
            return saved.read(shard, engine.filters().sizing());
        }
    }

    /** Blocks every rebuild before its first page until the returned latch opens. */
    private CountDownLatch holdRebuilds() {
        CountDownLatch release = new CountDownLatch(1);
        engine.filters().scanHook = (s, k) -> release.await();
        return release;
    }

    // ---- the write path

    @Test
    void everyPutAndAppendIsInTheFilterWhenTheWriteReturns() {
        start();
        Shard shard = table.shard(1);
        long epoch = shard.open();
        write(
                shard,
                epoch,
                put("a", "1"),
                append("list", "x"),
                put("b", "2"),
                delete("b"),
                deleteRange("a", "b"));

        // Deletes leave their keys in (a false positive until the next rebuild, never wrong).
        assertThat(absent(shard, epoch, List.of("a", "list", "b"))).isEmpty();
        // ...and the filter is not one that says yes to everything.
        assertThat(absent(shard, epoch, keys("never-", 1000)).size()).isGreaterThan(950);
        assertThat(shard.filterStatus().state()).isEqualTo(FilterStatus.State.AVAILABLE);
    }

    // ---- snapshots, restore, clone

    @Test
    void aSnapshotCarriesTheFilterAsOfItsMarkerAndAReusedOneSharesIt() throws IOException {
        start();
        Shard shard = table.shard(1);
        long epoch = shard.open();
        List<String> before = keys("before-", 300);
        List<String> after = keys("after-", 300);
        putAll(shard, epoch, before);
        List<WriteOp> ops = new ArrayList<>();
        ops.add(marker(1, false));
        after.forEach(k -> ops.add(put(k, "v")));
        ops.add(marker(2, false));
        write(shard, epoch, ops.toArray(new WriteOp[0]));

        try (RebuildingFilter one = snapshotFilter(1, 1)) {
            assertThat(absent(one::mightContain, before)).isEmpty();
            // The keys after the marker are not in snapshot 1's filter, beyond false positives.
            assertThat(absent(one::mightContain, after).size()).isGreaterThan(280);
        }
        try (RebuildingFilter two = snapshotFilter(1, 2)) {
            assertThat(absent(two::mightContain, before)).isEmpty();
            assertThat(absent(two::mightContain, after)).isEmpty();
        }

        closeIdle();
        SnapshotMeta reused = write(shard, epoch, marker(3, false)).get(0);
        assertThat(reused.reused()).isTrue();
        // The same cut, so the same filter, and nothing was opened to take it.
        assertThat(table.catalog().cutIdOf(1, 3)).isEqualTo(table.catalog().cutIdOf(1, 2));
        assertThat(shard.isOpen()).isFalse();
    }

    @Test
    void restoreLoadsTheSnapshotsFilterNotTheNewerOneWithoutAScan() {
        start();
        AtomicInteger pages = new AtomicInteger();
        Shard shard = table.shard(1);
        long epoch = shard.open();
        List<String> first = keys("first-", 500);
        List<String> second = keys("second-", 500);
        putAll(shard, epoch, first);
        write(shard, epoch, marker(1, false));
        putAll(shard, epoch, second);
        write(shard, epoch, marker(2, false));

        engine.filters().scanHook = (s, k) -> pages.incrementAndGet();
        long restored = shard.restore(1);
        assertThat(shard.filterStatus().state()).isEqualTo(FilterStatus.State.AVAILABLE);
        assertThat(absent(shard, restored, first)).isEmpty();
        assertThat(absent(shard, restored, second).size()).isGreaterThan(470);

        long again = shard.restore(2);
        assertThat(absent(shard, again, first)).isEmpty();
        assertThat(absent(shard, again, second)).isEmpty();
        assertThat(pages).hasValue(0);
        // A restore is a new lease: the old one is fenced for filters too.
        assertThatThrownBy(() -> shard.copyFilter(restored).close())
                .isInstanceOfSatisfying(
                        KvServerException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.FENCED));
    }

    @Test
    void cloneStartsTheTargetWithTheSourceSnapshotsFilter() {
        start();
        engine.createTable("target", 4, false);
        Shard source = table.shard(2);
        long epoch = source.open();
        List<String> keys = keys("k-", 400);
        putAll(source, epoch, keys);
        write(source, epoch, marker(5, false));
        putAll(source, epoch, keys("later-", 100));

        Shard target = engine.tableStore("target").shard(2);
        long cloned = target.cloneFrom(source, 5);

        assertThat(absent(target, cloned, keys)).isEmpty();
        assertThat(absent(target, cloned, keys("later-", 100)).size()).isGreaterThan(90);
    }

    // ---- lifecycle

    @Test
    void aCleanCloseSavesTheFilterWhichTheReopenLoadsAndTheNextPutInvalidates() throws IOException {
        start();
        Shard shard = table.shard(1);
        long epoch = shard.open();
        List<String> keys = keys("k-", 600);
        putAll(shard, epoch, keys);
        awaitNoRebuild(shard);
        long versionBefore = version(shard, epoch);

        closeIdle();
        assertThat(shard.isOpen()).isFalse();
        assertThat(savedAtClose(1)).isTrue();
        assertThat(shard.filterStatus().state()).isEqualTo(FilterStatus.State.SAVED);
        assertThat(engine.filterBytes()).isZero();

        AtomicInteger pages = new AtomicInteger();
        engine.filters().scanHook = (s, k) -> pages.incrementAndGet();
        assertThat(absent(shard, epoch, keys)).isEmpty();
        assertThat(version(shard, epoch)).isEqualTo(versionBefore);
        assertThat(pages).hasValue(0);
        // Reads and deletes leave the saved filter valid; a put makes it stale, so it goes first.
        write(shard, epoch, delete("k-0000001"));
        assertThat(savedAtClose(1)).isTrue();
        write(shard, epoch, put("new", "v"));
        assertThat(liveFilters(1)).doesNotExist();

        restart();
        // Served from the saved filters with every scan held: none is needed (a refresh the
        // small floor-sized filter asks for may be queued, and waits).
        CountDownLatch release = holdRebuilds();
        Shard reopened = engine.tableStore("t").shard(1);
        assertThat(savedAtClose(1)).isTrue();
        // The deleted key may have left the filter by a rebuild before the stop: never a present
        // one.
        List<String> all = new ArrayList<>(keys);
        all.remove("k-0000001");
        all.add("new");
        assertThat(absent(reopened, epoch, all)).isEmpty();
        release.countDown();
    }

    @Test
    void aShardWithDataButNoSavedFilterIsUnavailableUntilRebuiltWhileWritesGoOn()
            throws IOException {
        start();
        Shard shard = table.shard(1);
        long epoch = shard.open();
        List<String> keys = keys("k-", 5000);
        putAll(shard, epoch, keys);
        closeIdle();
        // What an unclean stop after a write leaves: data, no saved filter.
        assertThat(liveFilters(1).toFile().delete()).isTrue();
        assertThat(shard.filterStatus().state()).isEqualTo(FilterStatus.State.MISSING);

        CountDownLatch release = holdRebuilds();
        // The fetch opens the shard and queues the rebuild, whose thread may already have
        // replaced the reason by the time the error is built: either is right here.
        assertThatThrownBy(() -> shard.copyFilter(epoch).close())
                .isInstanceOfSatisfying(
                        KvServerException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.FILTER_UNAVAILABLE))
                .hasMessageContaining("epoch " + epoch)
                .satisfies(
                        e ->
                                assertThat(e.getMessage())
                                        .containsAnyOf("no saved filter", "being rebuilt"));
        await("the rebuild to start", () -> shard.filterStatus().rebuildRunning());
        assertThat(shard.filterStatus().state()).isEqualTo(FilterStatus.State.REBUILDING);
        assertUnavailable(shard, epoch, "being rebuilt");
        // Writes are not held up by the rebuild, and what they add is in the rebuilt filter.
        List<String> during = keys("during-", 500);
        putAll(shard, epoch, during);
        // A snapshot cut meanwhile carries no filter (restoring it rebuilds again).
        write(shard, epoch, marker(1, false));
        assertThat(snapshotFilter(1, 1)).isNull();

        release.countDown();
        awaitAvailable(shard, epoch);
        List<String> all = new ArrayList<>(keys);
        all.addAll(during);
        assertThat(absent(shard, epoch, all)).isEmpty();
        // The scan saw the 5,000 keys of its snapshot; the 500 came in as inserts.
        assertThat(shard.filterStatus().keysAtBuild()).isEqualTo(5000);

        long restored = shard.restore(1);
        awaitAvailableAfterFetchTries(shard, restored);
        assertThat(absent(shard, restored, all)).isEmpty();
    }

    @Test
    void aSavedFilterThatDoesNotReadIsRebuiltNotUsed() throws IOException {
        start();
        Shard shard = table.shard(1);
        long epoch = shard.open();
        List<String> keys = keys("k-", 2000);
        putAll(shard, epoch, keys);
        closeIdle();
        byte[] bytes = Files.readAllBytes(liveFilters(1));
        bytes[bytes.length / 2] ^= (byte) 0xff;
        Files.write(liveFilters(1), bytes, StandardOpenOption.TRUNCATE_EXISTING);

        awaitAvailableAfterFetchTries(shard, epoch);
        assertThat(absent(shard, epoch, keys)).isEmpty();
    }

    private static void awaitAvailableAfterFetchTries(Shard shard, long epoch) {
        await(
                shard + " to serve a filter",
                () -> {
                    try {
                        shard.copyFilter(epoch).close();
                        return true;
                    } catch (KvServerException e) {
                        assertThat(e.code()).isEqualTo(ErrorCode.FILTER_UNAVAILABLE);
                        return false;
                    }
                });
    }

    @Test
    void dropAndRecreateStartsFromAnEmptyFilterAndFreesTheOldOne() {
        start();
        Shard shard = table.shard(0);
        long epoch = shard.open();
        List<String> keys = keys("k-", 1000);
        putAll(shard, epoch, keys);
        assertThat(engine.filterBytes()).isPositive();

        engine.dropTable("t");
        assertThat(engine.filterBytes()).isZero();
        engine.createTable("t", 4, false);
        Shard fresh = engine.tableStore("t").shard(0);
        long newEpoch = fresh.open();
        assertThat(newEpoch).isGreaterThan(epoch);
        assertThat(absent(fresh, newEpoch, keys).size()).isGreaterThan(950);
        write(fresh, newEpoch, put("k-0000001", "again"));
        assertThat(absent(fresh, newEpoch, List.of("k-0000001"))).isEmpty();
    }

    // ---- rebuilds

    @Test
    void keysWrittenOnBothSidesOfTheScanCursorAreInTheRebuiltFilter() throws Exception {
        start();
        Shard shard = table.shard(1);
        long epoch = shard.open();
        putAll(shard, epoch, keys("m-", 20_000));
        closeIdle();
        Files.delete(liveFilters(1));

        // Half-way through the scan (page 3 of 5) another thread writes keys sorting before the
        // cursor (scanned already: only the insert can bring them in), after it (the snapshot
        // predates them), and overwrites.
        List<String> during = new ArrayList<>(keys("a-", 300));
        during.addAll(keys("z-", 300));
        during.addAll(keys("m-", 300));
        ExecutorService writer = Executors.newSingleThreadExecutor();
        AtomicInteger interleaved = new AtomicInteger();
        try {
            engine.filters().scanHook =
                    (s, scanned) -> {
                        if (scanned == 2L * ShardFilter.SCAN_PAGE_KEYS) {
                            interleaved.incrementAndGet();
                            try {
                                writer.submit(() -> putAll(shard, epoch, during)).get();
                            } catch (java.util.concurrent.ExecutionException e) {
                                throw new AssertionError(e.getCause());
                            }
                        }
                    };
            awaitAvailableAfterFetchTries(shard, epoch);
        } finally {
            writer.shutdownNow();
        }
        assertThat(interleaved).hasValue(1);
        List<String> all = new ArrayList<>(keys("m-", 20_000));
        all.addAll(during);
        assertThat(absent(shard, epoch, all)).isEmpty();
    }

    @Test
    void aRefreshKeepsKeysWrittenWhileItRunsAndDropsDeletedOnes() {
        start();
        Shard shard = table.shard(1);
        long epoch = shard.open();
        CountDownLatch release = holdRebuilds();
        // The floor-sized filter (64 keys) asks for a rebuild after about 55 new keys; the
        // rebuild begins, is held, and the remaining keys arrive meanwhile.
        List<String> old = keys("old-", 10_000);
        putAll(shard, epoch, old);
        await("a refresh to start", () -> shard.filterStatus().rebuildRunning());
        assertThat(shard.filterStatus().state()).isEqualTo(FilterStatus.State.AVAILABLE);
        release.countDown();
        engine.filters().scanHook = (s, k) -> {};
        awaitNoRebuild(shard);
        long afterGrowth = version(shard, epoch);
        assertThat(afterGrowth).isPositive();
        assertThat(absent(shard, epoch, old)).isEmpty();

        // Delete them all, then write as many new ones: the fill asks for a rebuild, whose scan
        // no longer sees the deleted keys.
        write(shard, epoch, deleteRange("old-", "old.z"));
        List<String> fresh = keys("new-", 20_000);
        putAll(shard, epoch, fresh);
        await("a refresh after the deletes", () -> version(shard, epoch) > afterGrowth);
        awaitNoRebuild(shard);
        // One more write asks for the rebuild a write made while one ran could not.
        write(shard, epoch, put("new-0000000", "again"));
        awaitNoRebuild(shard);
        assertThat(absent(shard, epoch, fresh)).isEmpty();
        assertThat(absent(shard, epoch, old).size()).isGreaterThan(9_000);
    }

    // ---- memory

    /**
     * A new shard of a table with few shards is sized for the keys such a shard soon holds: 1,500
     * keys written 100 at a time into a shard of a 128-shard table keep the filter it started with
     * (each rebuild holds the shard's writes and makes every client fetch the new copy); the shards
     * of a 32,768-shard table start at the floor.
     */
    @Test
    void aNewShardOfAFewShardTableTakesItsFirstThousandsOfKeysWithoutARebuild() {
        start();
        engine.createTable("wide", 128, false);
        Shard shard = engine.tableStore("wide").shard(5);
        long epoch = shard.open();
        long startVersion = shard.filterStatus().version();
        List<String> keys = keys("k-", 1_500);
        for (int from = 0; from < keys.size(); from += 100) {
            List<WriteOp> ops = new ArrayList<>();
            for (String key : keys.subList(from, from + 100)) {
                ops.add(put(key, "v"));
            }
            shard.write(epoch, ops);
        }
        awaitNoRebuild(shard);
        assertThat(shard.filterStatus().version()).isEqualTo(startVersion);
        assertThat(absent(shard, epoch, keys)).isEmpty();

        assertThat(engine.filters().freshGeometry(32_768))
                .isEqualTo(FilterOptions.DEFAULTS.sizing().geometryForLiveKeys(0));
    }

    @Test
    void aFilterThatDoesNotFitTheNodeLimitIsUnavailableNeverPartial() throws IOException {
        // A new shard's filter in a table of 4 shards is sized for 2,048 keys (5,184 bytes): one
        // fits in 5,484; the 300 bytes left hold neither a second one nor a rebuild at the floor.
        long one =
                NodeFilters.bytesOf(
                        FilterOptions.DEFAULTS
                                .sizing()
                                .geometryForLiveKeys(NodeFilters.MAX_FRESH_SHARD_KEYS));
        assertThat(one).isEqualTo(5_184);
        long limit = 5_484;
        start(FilterOptions.DEFAULTS.withMaxMemoryBytes(limit));
        Shard first = table.shard(0);
        Shard second = table.shard(1);
        long e1 = first.open();
        long e2 = second.open();
        write(first, e1, put("a", "1"));
        write(second, e2, put("b", "2"));

        assertThat(absent(first, e1, List.of("a"))).isEmpty();
        assertUnavailable(second, e2, "filter.max-memory-bytes " + limit);
        assertThat(engine.filterBytes()).isLessThanOrEqualTo(limit);
        assertThat(engine.filters().reservedBytes()).isEqualTo(first.filterStatus().memoryBytes());

        // Not saved when it had none, so the next open knows to rebuild it.
        closeIdle();
        assertThat(savedAtClose(0)).isTrue();
        assertThat(savedAtClose(1)).isFalse();
        assertThat(second.filterStatus().state()).isEqualTo(FilterStatus.State.MISSING);
        assertThat(engine.filters().reservedBytes()).isZero();
    }

    @Test
    void rebuildsAreRateLimitedButAScanSlowerThanTheLimitIsNotSlowedFurther()
            throws InterruptedException {
        RebuildRateLimiter limiter = new RebuildRateLimiter(1 << 20);
        long start = System.nanoTime();
        for (int i = 0; i < 4; i++) {
            limiter.charge(128 << 10);
        }
        // 512 KiB at 1 MiB/s is 500 ms, less the 100 ms burst: sleeps never end early.
        assertThat(System.nanoTime() - start)
                .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(400));

        // A page that took longer to read (here: 200 ms) than its cost (62.5 ms) is paid for by
        // that time: no wait. (A stall of this thread only makes the wait shorter.)
        Thread.sleep(200);
        assertThat(limiter.reserve(64 << 10)).isNotPositive();

        assertThat(new RebuildRateLimiter(0).reserve(Long.MAX_VALUE / 2)).isZero();
    }
}
