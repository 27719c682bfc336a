package io.taishan.bloom;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A writer, readers and the background work of each filter kind at once. Every check is "no false
 * negative for a key whose insert happened-before the check" (an id is published through a volatile
 * after its insert returned). The work is bounded by operation counts, never by time, and what is
 * asserted does not depend on how the threads interleave.
 */
class ConcurrencyTest {

    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final AtomicBoolean writerDone = new AtomicBoolean();
    private final AtomicLong published = new AtomicLong(-1);
    private final AtomicLong falseNegatives = new AtomicLong();
    private final AtomicLong checks = new AtomicLong();
    private final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();

    @AfterEach
    void stopPool() throws InterruptedException {
        pool.shutdownNow();
        assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void bloomFilterReadersSeeEveryPutThatHappenedBefore() throws Exception {
        int keys = 300_000;
        try (BloomFilter filter = BloomFilter.create(keys, 0.01)) {
            List<Future<?>> readers = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                long seed = 1000 + r;
                readers.add(
                        pool.submit(
                                () ->
                                        readUntilWriterDone(
                                                seed, id -> filter.mightContain(Keys.hash(id)))));
            }
            for (long id = 0; id < keys; id++) {
                filter.put(Keys.hash(id));
                published.set(id);
            }
            writerDone.set(true);
            for (Future<?> reader : readers) {
                reader.get(60, TimeUnit.SECONDS);
            }
        }
        assertNoFalseNegative();
    }

    /**
     * The server's shard: the writer inserts (and deletes, which the filter is not told) while a
     * rebuild loop scans the live keys and swaps filters back to back, readers look up, and a
     * snapshot thread copies, serializes and reloads the filter.
     */
    @Test
    void rebuildingFilterUnderWriterRebuildsReadersAndSnapshots() throws Exception {
        int writes = 150_000;
        FilterSizing sizing = new FilterSizing(0.01, 256, 64L << 20);
        Object storeLock = new Object();
        Set<Long> store =
                new HashSet<>(); // stands for RocksDB: a snapshot is a copy under the lock
        AtomicLong rebuilds = new AtomicLong();
        AtomicLong snapshots = new AtomicLong();
        try (RebuildingFilter shard = RebuildingFilter.createEmpty(sizing)) {
            List<Future<?>> background = new ArrayList<>();
            // Even ids are never deleted, so whatever was published is live.
            for (int r = 0; r < 2; r++) {
                long seed = 2000 + r;
                background.add(
                        pool.submit(
                                () ->
                                        readUntilWriterDone(
                                                seed,
                                                id ->
                                                        (id & 1) == 1
                                                                || shard.mightContain(
                                                                        Keys.hash(id)))));
            }
            background.add(
                    pool.submit(
                            () -> {
                                while (!writerDone.get()) {
                                    Set<Long> scan;
                                    RebuildingFilter.Rebuild rebuild;
                                    synchronized (storeLock) {
                                        rebuild = shard.beginRebuild(store.size());
                                        scan = new HashSet<>(store); // opened after beginRebuild
                                    }
                                    long[] batch = new long[512];
                                    int n = 0;
                                    for (long id : scan) {
                                        batch[n++] = Keys.hash(id);
                                        if (n == batch.length) {
                                            rebuild.addAll(batch, 0, n);
                                            n = 0;
                                        }
                                    }
                                    rebuild.addAll(batch, 0, n);
                                    rebuild.finish();
                                    rebuilds.incrementAndGet();
                                }
                                return null;
                            }));
            background.add(
                    pool.submit(
                            () -> {
                                SplittableRandom random = new SplittableRandom(3000);
                                while (!writerDone.get()) {
                                    long upTo = published.get();
                                    try (RebuildingFilter.Snapshot snapshot = shard.snapshot()) {
                                        checkSample(
                                                random,
                                                upTo,
                                                id ->
                                                        (id & 1) == 1
                                                                || snapshot.filter()
                                                                        .mightContain(
                                                                                Keys.hash(id)));
                                        ByteArrayOutputStream out = new ByteArrayOutputStream();
                                        snapshot.writeTo(out);
                                        try (RebuildingFilter restored =
                                                RebuildingFilter.readFrom(
                                                        sizing,
                                                        new ByteArrayInputStream(
                                                                out.toByteArray()))) {
                                            checkSample(
                                                    random,
                                                    upTo,
                                                    id ->
                                                            (id & 1) == 1
                                                                    || restored.mightContain(
                                                                            Keys.hash(id)));
                                        }
                                    }
                                    snapshots.incrementAndGet();
                                }
                                return null;
                            }));

            SplittableRandom random = new SplittableRandom(4000);
            for (long id = 0; id < writes; id++) {
                synchronized (storeLock) {
                    store.add(id); // applied to the store...
                }
                shard.insert(Keys.hash(id)); // ...then to the filter, before the "ack"
                published.set(id);
                if (id > 100 && random.nextInt(3) == 0) {
                    long victim = random.nextLong(id / 2) * 2 + 1; // an odd id
                    synchronized (storeLock) {
                        store.remove(victim);
                    }
                }
            }
            writerDone.set(true);
            for (Future<?> task : background) {
                task.get(60, TimeUnit.SECONDS);
            }
            for (long id : store) {
                if (!shard.mightContain(Keys.hash(id))) {
                    falseNegatives.incrementAndGet();
                    failures.add("live id " + id + " missing after all writes");
                }
            }
            System.out.printf(
                    "%d rebuilds, %d snapshots, %d checks, final %s%n",
                    rebuilds.get(), snapshots.get(), checks.get(), shard);
            assertThat(rebuilds.get()).isPositive();
            assertThat(shard.version()).isEqualTo(rebuilds.get());
        }
        assertNoFalseNegative();
    }

    /**
     * The client's copy: the task thread writes and reads while a loader re-fetches the server's
     * filter again and again, and the server applies the writes later, on its own thread, with
     * rebuilds. The loader keeps to the protocol: it waits until every write started before its
     * {@code beginLoad} is applied before the server serializes the copy.
     */
    @Test
    void loadingFilterUnderWriterReaderAndLoader() throws Exception {
        int writes = 100_000;
        FilterSizing sizing = new FilterSizing(0.01, 256, 64L << 20);
        AtomicLong started = new AtomicLong(); // writes the client has begun
        AtomicLong applied = new AtomicLong(); // writes the server has applied, in order
        AtomicLong accepted = new AtomicLong();
        AtomicLong rejected = new AtomicLong();
        ConcurrentLinkedQueue<Long> inFlight = new ConcurrentLinkedQueue<>();
        try (RebuildingFilter server = RebuildingFilter.createEmpty(sizing);
                LoadingFilter client = new LoadingFilter(1 << 14)) {
            List<Future<?>> background = new ArrayList<>();
            background.add(
                    pool.submit(
                            () -> {
                                Set<Long> store = new HashSet<>();
                                while (applied.get() < writes) {
                                    Long id = inFlight.poll();
                                    if (id == null) {
                                        Thread.onSpinWait();
                                        continue;
                                    }
                                    store.add(id);
                                    server.insert(Keys.hash(id));
                                    applied.incrementAndGet();
                                    if (server.needsRebuild()) {
                                        try (RebuildingFilter.Rebuild rebuild =
                                                server.beginRebuild(store.size())) {
                                            for (long live : store) {
                                                rebuild.add(Keys.hash(live));
                                            }
                                            rebuild.finish();
                                        }
                                    }
                                }
                                return null;
                            }));
            background.add(
                    pool.submit(
                            () -> {
                                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                                // One more load after the writer is done, which nothing can
                                // make stale, so at least one is accepted on any schedule.
                                boolean last;
                                do {
                                    last = writerDone.get();
                                    LoadingFilter.PendingLoad load = client.beginLoad();
                                    long mustBeApplied = started.get();
                                    while (applied.get() < mustBeApplied) {
                                        if (System.nanoTime() > deadline) {
                                            throw new AssertionError("server stopped applying");
                                        }
                                        Thread.onSpinWait();
                                    }
                                    byte[] bytes;
                                    long version;
                                    try (RebuildingFilter.Snapshot snapshot = server.snapshot()) {
                                        bytes = snapshot.filter().toByteArray();
                                        version = snapshot.version();
                                    }
                                    if (load.complete(BloomFilter.fromBytes(bytes), version)) {
                                        accepted.incrementAndGet();
                                    } else {
                                        rejected.incrementAndGet();
                                    }
                                } while (!last);
                                return null;
                            }));
            background.add(
                    pool.submit(
                            () ->
                                    readUntilWriterDone(
                                            5000, id -> client.mightContain(Keys.hash(id)))));

            for (long id = 0; id < writes; id++) {
                while (id - applied.get() > 2_000) {
                    Thread.onSpinWait(); // back-pressure, as the backend's write queue applies
                }
                started.incrementAndGet(); // announced before the copy can miss it
                client.insert(Keys.hash(id));
                inFlight.add(id);
                published.set(id);
            }
            writerDone.set(true);
            for (Future<?> task : background) {
                task.get(60, TimeUnit.SECONDS);
            }
            for (long id = 0; id < writes; id++) {
                if (!client.mightContain(Keys.hash(id)) || !server.mightContain(Keys.hash(id))) {
                    falseNegatives.incrementAndGet();
                    failures.add("id " + id + " missing after all writes");
                }
            }
            System.out.printf(
                    "%d loads accepted, %d rejected, %d overflows, server version %d, %d checks,"
                            + " %d absent answers%n",
                    accepted.get(),
                    rejected.get(),
                    client.bufferOverflows(),
                    server.version(),
                    checks.get(),
                    client.absentAnswers());
            assertThat(accepted.get()).isPositive();
            assertThat(client.isLoaded()).isTrue();
        }
        assertNoFalseNegative();
    }

    private interface Lookup {
        boolean mightContain(long id) throws Exception;
    }

    /** Until the writer is done: the latest published id, and random earlier ones. */
    private Void readUntilWriterDone(long seed, Lookup lookup) throws Exception {
        SplittableRandom random = new SplittableRandom(seed);
        while (!writerDone.get()) {
            checkSample(random, published.get(), lookup);
        }
        return null;
    }

    private void checkSample(SplittableRandom random, long upTo, Lookup lookup) throws Exception {
        if (upTo < 0) {
            Thread.onSpinWait();
            return;
        }
        for (int i = 0; i < 64; i++) {
            long id = i == 0 ? upTo : random.nextLong(upTo + 1);
            checks.incrementAndGet();
            if (!lookup.mightContain(id)) {
                falseNegatives.incrementAndGet();
                failures.add("id " + id + " (published up to " + upTo + ")");
            }
        }
    }

    private void assertNoFalseNegative() {
        assertThat(checks.get()).isPositive();
        assertThat(failures).as("false negatives").isEmpty();
        assertThat(falseNegatives.get()).isZero();
    }
}
