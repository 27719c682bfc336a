package io.taishan.bloom;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Not a test: the small harness behind the cost figures in the module README (no JMH, so take the
 * numbers as a guide: warm-up rounds, then the median of timed rounds over pre-computed hashes).
 * Run with
 *
 * <pre>
 * mvn -q -B -o -pl bloom test-compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt
 * java -cp bloom/target/test-classes:bloom/target/classes:$(cat bloom/target/cp.txt) \
 *     io.taishan.bloom.BloomCostHarness
 * </pre>
 */
public final class BloomCostHarness {

    private static final int ROUNDS = 7;
    private static long sink;

    private BloomCostHarness() {}

    public static void main(String[] args) {
        System.out.printf(
                "java %s, %s, %d cores%n",
                System.getProperty("java.version"),
                System.getProperty("os.arch"),
                Runtime.getRuntime().availableProcessors());
        keyHash();
        for (long keys : new long[] {100_000, 10_000_000}) {
            filter(keys);
        }
        wrappers();
        System.out.println("(sink " + sink + ")");
    }

    private static void keyHash() {
        for (int length : new int[] {19, 40, 100}) {
            byte[][] keys = new byte[1024][length];
            SplittableRandom random = new SplittableRandom(1);
            for (byte[] key : keys) {
                for (int i = 0; i < length; i++) {
                    key[i] = (byte) random.nextInt();
                }
            }
            int ops = 2_000_000;
            double ns =
                    median(
                            () -> {
                                long h = 0;
                                for (int i = 0; i < ops; i++) {
                                    h += KeyHash.hash(keys[i & 1023], 0, length);
                                }
                                sink += h;
                            },
                            ops);
            System.out.printf("KeyHash.hash, %d-byte key: %.1f ns%n", length, ns);
        }
    }

    private static void filter(long keys) {
        FilterSizing sizing = FilterSizing.DEFAULT;
        FilterGeometry geometry = sizing.geometryFor(keys);
        long capacity = sizing.capacity(geometry);
        long[] present = hashes(capacity, 2);
        long[] absent = hashes(Math.min(capacity, 4_000_000), 3);
        double[] freshPuts = new double[ROUNDS];
        for (int round = -ROUNDS; round < ROUNDS; round++) {
            try (BloomFilter empty = BloomFilter.create(geometry)) {
                long start = System.nanoTime();
                for (long h : present) {
                    empty.put(h);
                }
                if (round >= 0) {
                    freshPuts[round] = (double) (System.nanoTime() - start) / present.length;
                }
            }
        }
        Arrays.sort(freshPuts);
        double put = freshPuts[ROUNDS / 2];
        try (BloomFilter filter = BloomFilter.create(geometry)) {
            double putAgain =
                    median(
                            () -> {
                                for (long h : present) {
                                    filter.put(h);
                                }
                            },
                            present.length);
            double hit =
                    median(
                            () -> {
                                long found = 0;
                                for (long h : present) {
                                    found += filter.mightContain(h) ? 1 : 0;
                                }
                                sink += found;
                            },
                            present.length);
            long[] falsePositives = new long[1];
            double miss =
                    median(
                            () -> {
                                long found = 0;
                                for (long h : absent) {
                                    found += filter.mightContain(h) ? 1 : 0;
                                }
                                falsePositives[0] = found;
                            },
                            absent.length);
            System.out.printf(
                    "filter for %,d keys at 1%%: %s, %,d bytes off-heap = %.3f bytes/key;"
                            + " measured FP at capacity %.4f over %,d absent keys (model %.4f)%n",
                    capacity,
                    geometry,
                    filter.sizeBytes(),
                    (double) filter.sizeBytes() / capacity,
                    (double) falsePositives[0] / absent.length,
                    absent.length,
                    geometry.expectedFpp(capacity));
            System.out.printf(
                    "  put %.1f ns (into an empty filter up to capacity), put again %.1f ns,"
                            + " mightContain present %.1f ns, absent %.1f ns (hash given)%n",
                    put, putAgain, hit, miss);
        }
    }

    private static void wrappers() {
        FilterSizing sizing = FilterSizing.DEFAULT;
        long[] present = hashes(100_000, 4);
        long[] absent = hashes(100_000, 5);
        try (RebuildingFilter server = RebuildingFilter.createEmpty(sizing)) {
            try (RebuildingFilter.Rebuild rebuild = server.beginRebuild(100_000)) {
                rebuild.finish(); // sized for 100,000 live keys
            }
            double insert =
                    median(
                            () -> {
                                for (long h : present) {
                                    server.insert(h);
                                }
                            },
                            present.length);
            double lookup =
                    median(
                            () -> {
                                long found = 0;
                                for (long h : absent) {
                                    found += server.mightContain(h) ? 1 : 0;
                                }
                                sink += found;
                            },
                            absent.length);
            System.out.printf(
                    "RebuildingFilter (200k capacity): insert %.1f ns, mightContain absent %.1f ns%n",
                    insert, lookup);
            try (LoadingFilter client = new LoadingFilter();
                    RebuildingFilter.Snapshot copy = server.snapshot()) {
                client.beginLoad().complete(copy.filter().copy(), copy.version());
                double clientInsert =
                        median(
                                () -> {
                                    for (long h : present) {
                                        client.insert(h);
                                    }
                                },
                                present.length);
                double clientLookup =
                        median(
                                () -> {
                                    long found = 0;
                                    for (long h : absent) {
                                        found += client.mightContain(h) ? 1 : 0;
                                    }
                                    sink += found;
                                },
                                absent.length);
                System.out.printf(
                        "LoadingFilter (loaded): insert %.1f ns, mightContain absent %.1f ns"
                                + " (counts the answer)%n",
                        clientInsert, clientLookup);
            }
        }
    }

    private static long[] hashes(long n, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        long[] hashes = new long[Math.toIntExact(n)];
        for (int i = 0; i < hashes.length; i++) {
            hashes[i] = random.nextLong();
        }
        return hashes;
    }

    /** Median ns per operation over the timed rounds, after as many warm-up rounds. */
    private static double median(Runnable round, long opsPerRound) {
        double[] ns = new double[ROUNDS];
        for (int i = 0; i < ROUNDS; i++) {
            round.run();
        }
        for (int i = 0; i < ROUNDS; i++) {
            long start = System.nanoTime();
            round.run();
            ns[i] = (double) (System.nanoTime() - start) / opsPerRound;
        }
        Arrays.sort(ns);
        return ns[ROUNDS / 2];
    }
}
