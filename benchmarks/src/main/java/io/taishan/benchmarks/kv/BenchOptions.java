package io.taishan.benchmarks.kv;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/** What to measure and how long: the command line of {@link KvServiceBenchmark}. */
record BenchOptions(
        ServerMode serverMode,
        String address,
        Path dataDir,
        Set<String> suites,
        int runs,
        int readKeys,
        int getCallsPerRun,
        int multiGetCallsPerRun,
        List<Integer> writeBatchSizes,
        List<Integer> snapshotSizesMib,
        boolean quick) {

    /** Where the kv-server runs. */
    enum ServerMode {
        /** A child JVM started by the benchmark: its GC and threads do not disturb the client. */
        CHILD,
        /** In the benchmark's JVM. */
        EMBEDDED,
        /** A server somebody else started, at {@link #address()}. */
        EXTERNAL
    }

    static final String USAGE =
            String.join(
                    "\n",
                    "usage: taishan-kv-bench [options]",
                    "  --server child|embedded   where the kv-server runs (default child: its own"
                            + " JVM)",
                    "  --address HOST:PORT       use a running kv-server instead",
                    "  --data-dir DIR            the started server's data dir (default: a temp"
                            + " dir, deleted)",
                    "  --suites read,write,snapshot   what to run (default: all)",
                    "  --runs N                  measured runs per figure (default 5)",
                    "  --sizes 10,100,1024       shard sizes in MiB for snapshot/restore/clone",
                    "  --quick                   a smoke run: smaller sizes and fewer calls",
                    "  --help");

    static BenchOptions parse(String... args) {
        ServerMode mode = ServerMode.CHILD;
        String address = null;
        Path dataDir = null;
        Set<String> suites = new TreeSet<>(List.of("read", "write", "snapshot"));
        Integer runs = null;
        List<Integer> sizes = null;
        boolean quick = false;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--server" -> mode = ServerMode.valueOf(value(args, ++i, arg).toUpperCase());
                case "--address" -> {
                    address = value(args, ++i, arg);
                    mode = ServerMode.EXTERNAL;
                }
                case "--data-dir" -> dataDir = Path.of(value(args, ++i, arg));
                case "--suites" ->
                        suites = new TreeSet<>(List.of(value(args, ++i, arg).split(",")));
                case "--runs" -> runs = Integer.parseInt(value(args, ++i, arg));
                case "--sizes" -> sizes = integers(value(args, ++i, arg));
                case "--quick" -> quick = true;
                default -> throw new IllegalArgumentException("unknown option " + arg);
            }
        }
        if (!Set.of("read", "write", "snapshot").containsAll(suites)) {
            throw new IllegalArgumentException("unknown suite in " + suites);
        }
        if (runs != null && runs < 1) {
            throw new IllegalArgumentException("--runs must be >= 1");
        }
        return new BenchOptions(
                mode,
                address,
                dataDir,
                suites,
                runs != null ? runs : (quick ? 3 : 5),
                quick ? 20_000 : 100_000,
                quick ? 2_000 : 20_000,
                quick ? 200 : 1_000,
                List.of(1, 100, 1000),
                sizes != null ? sizes : (quick ? List.of(10, 50) : List.of(10, 100, 1024)),
                quick);
    }

    /** Snapshot, restore and clone runs are cheap next to loading the shard: twice as many. */
    int snapshotRuns() {
        return 2 * runs;
    }

    int warmupGetCalls() {
        return getCallsPerRun / 2;
    }

    int warmupMultiGetCalls() {
        return multiGetCallsPerRun / 2;
    }

    /**
     * Enough ops that a run lasts about a second or more at the rates seen on 2 cores, and a whole
     * number of batches.
     */
    int writeOpsPerRun(int batchSize) {
        int ops =
                switch (batchSize) {
                    case 1 -> 5_000;
                    case 100 -> 100_000;
                    default -> 300_000;
                };
        if (quick) {
            ops /= 10;
        }
        return Math.max(batchSize, ops / batchSize * batchSize);
    }

    /** Tables of one run share a prefix, so they cannot collide with tables already there. */
    String tablePrefix() {
        return "bench_" + Long.toString(ProcessHandle.current().pid(), 36) + "_";
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    private static List<Integer> integers(String csv) {
        List<Integer> result = new ArrayList<>();
        for (String part : csv.split(",")) {
            result.add(Integer.parseInt(part.trim()));
        }
        return result;
    }
}
