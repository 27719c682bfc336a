package io.taishan.benchmarks.report;

import io.taishan.benchmarks.state.ReadCache;
import io.taishan.benchmarks.state.StateSize;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * The report of {@code bin/taishan-state-compare}: both sides' JMH JSON files (Taishan and HashMap
 * in one JVM, RocksDB and HashMap in another) combined into Markdown tables (ops/ms, ratios against
 * RocksDB and HashMap, RPCs per 1,000 operations, absent lookups after a restore, issue 7's
 * targets) and PNG charts ({@link StateCharts}). Every figure comes from the files; nothing is
 * measured here.
 *
 * <pre>
 * StateReport --taishan taishan.json --rocksdb rocksdb.json [--machine machine.txt]
 *             [--charts DIR] [--out report.md]
 * </pre>
 *
 * {@code --taishan} and {@code --rocksdb} may each be given several times (one file per benchmark
 * when the runner interleaves the two sides).
 */
public final class StateReport {
    static final String TAISHAN_RUN = "Taishan";
    static final String ROCKSDB_RUN = "RocksDB";

    static final String ROCKSDB = "RocksDB";
    static final String TAISHAN = "Taishan";
    static final String TAISHAN_ALL = "Taishan cache=" + ReadCache.ALL;
    static final String TAISHAN_10PCT = "Taishan cache=" + ReadCache.TEN_PERCENT;
    static final String TAISHAN_10PCT_DISK = "Taishan cache=" + ReadCache.TEN_PERCENT_DISK;
    static final String HASHMAP_R = "HashMap (" + ROCKSDB_RUN + " run)";
    static final String HASHMAP_T = "HashMap (" + TAISHAN_RUN + " run)";

    /** Column order: the reference, its baseline, Taishan's baseline, Taishan by cache. */
    static final List<String> VARIANTS =
            List.of(
                    ROCKSDB,
                    HASHMAP_R,
                    HASHMAP_T,
                    TAISHAN,
                    TAISHAN_ALL,
                    TAISHAN_10PCT,
                    TAISHAN_10PCT_DISK);

    static final List<String> TAISHAN_VARIANTS =
            List.of(TAISHAN, TAISHAN_ALL, TAISHAN_10PCT, TAISHAN_10PCT_DISK);

    static final List<String> BENCHMARK_ORDER =
            List.of(
                    "valueGet",
                    "valueUpdate",
                    "mapGet",
                    "mapUpdate",
                    "mapContains",
                    "listAppend",
                    "listGet",
                    "valueAdd",
                    "mapAdd",
                    "mapIterator",
                    "listAdd");

    static final List<String> READS = List.of("valueGet", "mapGet", "mapContains", "listGet");

    static final String RESTORE = "absentLookupsAfterRestore";

    private final List<JmhResult> results;
    private final StringBuilder md = new StringBuilder();

    StateReport(List<JmhResult> results) {
        this.results = results;
    }

    public static void main(String[] args) throws IOException {
        List<Path> taishan = new ArrayList<>();
        List<Path> rocksDb = new ArrayList<>();
        Path machine = null;
        Path charts = null;
        Path out = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--taishan" -> taishan.add(Path.of(args[++i]));
                case "--rocksdb" -> rocksDb.add(Path.of(args[++i]));
                case "--machine" -> machine = Path.of(args[++i]);
                case "--charts" -> charts = Path.of(args[++i]);
                case "--out" -> out = Path.of(args[++i]);
                default -> {
                    System.err.println(
                            "usage: StateReport --taishan FILE... --rocksdb FILE... [--machine FILE]"
                                    + " [--charts DIR] [--out FILE]");
                    System.exit(2);
                }
            }
        }
        List<JmhResult> results = new ArrayList<>();
        for (Path file : taishan) {
            results.addAll(JmhResult.read(TAISHAN_RUN, file));
        }
        for (Path file : rocksDb) {
            results.addAll(JmhResult.read(ROCKSDB_RUN, file));
        }
        StateReport report = new StateReport(results);
        List<Path> images = List.of();
        if (charts != null) {
            System.setProperty("java.awt.headless", "true");
            images = new StateCharts(report).write(charts);
        }
        String text =
                report.render(
                        machine != null && Files.exists(machine) ? Files.readString(machine) : null,
                        images,
                        out == null ? null : out.toAbsolutePath().getParent());
        if (out != null) {
            Files.createDirectories(out.toAbsolutePath().getParent());
            Files.writeString(out, text);
        }
        System.out.print(text);
    }

    // ---- queries

    List<String> accesses() {
        return results.stream()
                .map(JmhResult::access)
                .distinct()
                .sorted(Comparator.comparing(a -> a.equals("UNIFORM") ? 0 : 1))
                .toList();
    }

    List<String> throughputBenchmarks() {
        Set<String> found =
                results.stream()
                        .filter(r -> !r.benchmark().equals(RESTORE))
                        .map(JmhResult::benchmark)
                        .collect(Collectors.toCollection(LinkedHashSet::new));
        List<String> ordered = new ArrayList<>(found);
        ordered.sort(
                Comparator.comparing(
                        b -> BENCHMARK_ORDER.contains(b) ? BENCHMARK_ORDER.indexOf(b) : 99));
        return ordered;
    }

    List<String> variants(Predicate<String> benchmarkFilter) {
        Set<String> present =
                results.stream()
                        .filter(r -> benchmarkFilter.test(r.benchmark()))
                        .map(JmhResult::variant)
                        .collect(Collectors.toSet());
        List<String> ordered = new ArrayList<>();
        VARIANTS.stream().filter(present::contains).forEach(ordered::add);
        present.stream().filter(v -> !VARIANTS.contains(v)).sorted().forEach(ordered::add);
        return ordered;
    }

    Optional<JmhResult> find(String benchmark, String access, String variant) {
        return results.stream()
                .filter(
                        r ->
                                r.benchmark().equals(benchmark)
                                        && r.access().equals(access)
                                        && r.variant().equals(variant))
                .findFirst();
    }

    /** The HashMap of the JVM that {@code result} ran in. */
    Optional<JmhResult> baseline(JmhResult result) {
        return find(
                result.benchmark(),
                result.access(),
                result.run().equals(TAISHAN_RUN) ? HASHMAP_T : HASHMAP_R);
    }

    OptionalRatio vsRocksDb(JmhResult result) {
        return new OptionalRatio(
                find(result.benchmark(), result.access(), ROCKSDB)
                        .map(rocks -> result.score() / rocks.score()));
    }

    /** (result / its run's HashMap) / (RocksDB / the RocksDB run's HashMap). */
    OptionalRatio vsRocksDbNormalised(JmhResult result) {
        Optional<JmhResult> rocks = find(result.benchmark(), result.access(), ROCKSDB);
        Optional<JmhResult> own = baseline(result);
        Optional<JmhResult> rocksBase = rocks.flatMap(this::baseline);
        if (rocks.isEmpty() || own.isEmpty() || rocksBase.isEmpty()) {
            return new OptionalRatio(Optional.empty());
        }
        return new OptionalRatio(
                Optional.of(
                        (result.score() / own.get().score())
                                / (rocks.get().score() / rocksBase.get().score())));
    }

    OptionalRatio vsHashMap(JmhResult result) {
        return new OptionalRatio(baseline(result).map(base -> result.score() / base.score()));
    }

    record OptionalRatio(Optional<Double> value) {
        String text() {
            return value.map(StateReport::ratio).orElse("–");
        }
    }

    // ---- rendering

    String render(String machine, List<Path> images, Path relativeTo) {
        line("## Results (generated by `StateReport`)");
        line("");
        Set<Integer> keyCounts =
                results.stream().map(JmhResult::setupKeyCount).collect(Collectors.toSet());
        line(
                String.format(
                        Locale.ROOT,
                        "%d results; setupKeyCount %s; %s. Scores are JMH's: mean ± 99.9%%"
                                + " confidence half-width over the measured iterations of one fork"
                                + " (no ± with one iteration).",
                        results.size(),
                        keyCounts,
                        iterationsText()));
        line("");
        if (machine != null) {
            line("Machine and runs (from the runner):");
            line("");
            line("```");
            md.append(machine.strip()).append('\n');
            line("```");
            line("");
        }
        for (String access : accesses()) {
            throughputTable(access);
            comparisonTable(access);
        }
        restoreTable();
        cacheSizing();
        targets();
        if (!images.isEmpty()) {
            line("### Charts");
            line("");
            for (Path image : images) {
                Path shown =
                        relativeTo == null ? image : relativeTo.relativize(image.toAbsolutePath());
                line("![" + image.getFileName() + "](" + shown + ")");
                line("");
            }
        }
        return md.toString();
    }

    private String iterationsText() {
        Set<Integer> iterations =
                results.stream()
                        .filter(r -> !r.benchmark().equals(RESTORE))
                        .map(JmhResult::iterations)
                        .collect(Collectors.toSet());
        return "measured iterations per throughput result: " + iterations;
    }

    private void throughputTable(String access) {
        List<String> benchmarks = throughputBenchmarks();
        if (benchmarks.isEmpty()) {
            return;
        }
        List<String> variants = variants(b -> !b.equals(RESTORE));
        line("### Throughput, " + access + " access (ops/ms, higher is better)");
        line("");
        md.append("| benchmark |");
        variants.forEach(v -> md.append(' ').append(v).append(" |"));
        md.append('\n').append("|---|");
        variants.forEach(v -> md.append("--:|"));
        md.append('\n');
        for (String benchmark : benchmarks) {
            md.append("| `").append(benchmark).append("` |");
            for (String variant : variants) {
                md.append(' ')
                        .append(
                                find(benchmark, access, variant)
                                        .map(StateReport::scoreText)
                                        .orElse("–"))
                        .append(" |");
            }
            md.append('\n');
        }
        line("");
    }

    private void comparisonTable(String access) {
        List<String> rows = new ArrayList<>();
        rows.add(ROCKSDB);
        rows.addAll(TAISHAN_VARIANTS);
        line("### Against RocksDB and HashMap, " + access + " access");
        line("");
        line(
                "× RocksDB: score / RocksDB's. × RocksDB (norm.): each divided by the HashMap of its"
                        + " own JVM first, which cancels most of the machine's load when the two"
                        + " runs met different load. × HashMap: against the HashMap of the same"
                        + " JVM. RPCs per 1,000 operations: read calls (Get, MultiGet, Scan) / all"
                        + " calls, from the backend's `taishan.rpc.<kind>.count` metrics. CPU µs"
                        + " per op: the CPU time of the benchmark's JVM (the task's side: task"
                        + " thread, the backend's threads, RocksDB's flushes and compactions, JIT,"
                        + " GC) and of Taishan's kv-server child, per operation measured.");
        line("");
        line(
                "| benchmark | backend | ops/ms | × RocksDB | × RocksDB (norm.) | × HashMap |"
                        + " read RPCs / 1,000 ops | all RPCs / 1,000 ops | task JVM CPU µs / op |"
                        + " kv-server CPU µs / op |");
        line("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|");
        for (String benchmark : throughputBenchmarks()) {
            for (String variant : rows) {
                Optional<JmhResult> found = find(benchmark, access, variant);
                if (found.isEmpty()) {
                    continue;
                }
                JmhResult r = found.get();
                line(
                        "| `"
                                + benchmark
                                + "` | "
                                + variant
                                + " | "
                                + scoreText(r)
                                + " | "
                                + (variant.equals(ROCKSDB) ? "1" : vsRocksDb(r).text())
                                + " | "
                                + (variant.equals(ROCKSDB) ? "1" : vsRocksDbNormalised(r).text())
                                + " | "
                                + vsHashMap(r).text()
                                + " | "
                                + numberOrDash(r.readRpcsPerThousand())
                                + " | "
                                + numberOrDash(r.rpcsPerThousand())
                                + " | "
                                + numberOrDash(r.taskJvmCpuMicrosPerOp())
                                + " | "
                                + numberOrDash(r.serverCpuMicrosPerOp())
                                + " |");
            }
        }
        line("");
    }

    private void restoreTable() {
        List<JmhResult> restores =
                results.stream().filter(r -> r.benchmark().equals(RESTORE)).toList();
        if (restores.isEmpty()) {
            return;
        }
        line("### Absent keys looked up right after a restore");
        line("");
        line(
                "Each measured iteration restores a fresh keyed backend from one checkpoint of the"
                        + " loaded value state (same job and operator, as after a failover), then"
                        + " looks up keys never written (JMH single-shot time, divided per lookup)."
                        + " Share = read RPCs (Get, MultiGet, Scan) / lookups; all RPCs also counts"
                        + " what the restored backend sent meanwhile (filter fetches, writes).");
        line("");
        line(
                "| access | backend | µs per lookup | restores measured | lookups | read RPCs |"
                        + " all RPCs | share that reached the server |");
        line("|---|---|--:|--:|--:|--:|--:|--:|");
        for (String access : accesses()) {
            for (String variant : variants(b -> b.equals(RESTORE))) {
                find(RESTORE, access, variant)
                        .ifPresent(
                                r ->
                                        line(
                                                "| "
                                                        + access
                                                        + " | "
                                                        + variant
                                                        + " | "
                                                        + number(r.score() * 1000)
                                                        + " | "
                                                        + r.iterations()
                                                        + " | "
                                                        + String.format(
                                                                Locale.ROOT, "%,.0f", r.ops())
                                                        + " | "
                                                        + (r.remote()
                                                                ? String.format(
                                                                        Locale.ROOT,
                                                                        "%,.0f",
                                                                        r.readRpcs())
                                                                : "–")
                                                        + " | "
                                                        + (r.remote()
                                                                ? String.format(
                                                                        Locale.ROOT,
                                                                        "%,.0f",
                                                                        r.rpcs())
                                                                : "–")
                                                        + " | "
                                                        + (r.remote() && r.ops() > 0
                                                                ? String.format(
                                                                        Locale.ROOT,
                                                                        "%.1f%%",
                                                                        100
                                                                                * r.readRpcs()
                                                                                / r.ops())
                                                                : "– (no server)")
                                                        + " |"));
            }
        }
        line("");
    }

    private void cacheSizing() {
        Optional<Integer> keys = results.stream().map(JmhResult::setupKeyCount).findFirst();
        if (keys.isEmpty()) {
            return;
        }
        int n = keys.get();
        line("### Read cache sizes given to Taishan (`taishan.cache.size`)");
        line("");
        line(
                "State bytes estimate = entries × (store key + value + "
                        + StateSize.ENTRY_OVERHEAD_BYTES
                        + " B assumed per cache entry), computed before the backend exists"
                        + " (`StateSize`); cache=all = "
                        + fraction(ReadCache.ALL)
                        + " × estimate (headroom: a segmented cache does not fill evenly),"
                        + " cache=10pct = "
                        + fraction(ReadCache.TEN_PERCENT)
                        + " × estimate; passed with `taishan.cache.type: off-heap`.");
        line("");
        line("| state | estimate | cache=all | cache=10pct |");
        line("|---|---|--:|--:|");
        for (StateSize size : StateSize.values()) {
            long estimate = size.estimate(n);
            line(
                    "| "
                            + size.name().toLowerCase(Locale.ROOT)
                            + " | "
                            + size.describe(n)
                            + " | "
                            + cacheSize(ReadCache.of(ReadCache.ALL, estimate))
                            + " | "
                            + cacheSize(ReadCache.of(ReadCache.TEN_PERCENT, estimate))
                            + " |");
        }
        line("");
        cacheActivity();
    }

    private static String cacheSize(ReadCache cache) {
        return ReadCache.mebibytes(cache.bytes()) + " (`" + cache.memorySize() + "`)";
    }

    private String cachedSettings() {
        return results.stream()
                .filter(r -> r.remote() && !r.cache().equals(ReadCache.NONE))
                .map(r -> "cache=" + r.cache())
                .distinct()
                .sorted()
                .collect(Collectors.joining(" and "));
    }

    private static String fraction(String setting) {
        return String.format(Locale.ROOT, "%.2f", ReadCache.of(setting, 1).fraction());
    }

    /** Whether the cache settings changed what reached the server, read from the RPC counts. */
    private void cacheActivity() {
        List<String> inert = new ArrayList<>();
        List<String> active = new ArrayList<>();
        for (String access : accesses()) {
            for (String benchmark : READS) {
                Optional<JmhResult> none = find(benchmark, access, TAISHAN);
                for (String cached : List.of(TAISHAN_ALL, TAISHAN_10PCT, TAISHAN_10PCT_DISK)) {
                    Optional<JmhResult> with = find(benchmark, access, cached);
                    if (none.isEmpty() || with.isEmpty()) {
                        continue;
                    }
                    double before = none.get().readRpcsPerThousand();
                    double after = with.get().readRpcsPerThousand();
                    String what =
                            "`"
                                    + benchmark
                                    + "` "
                                    + access
                                    + " "
                                    + cached.substring(TAISHAN.length() + 1)
                                    + ": "
                                    + numberOrDash(after)
                                    + " vs "
                                    + numberOrDash(before);
                    (after >= 0.99 * before ? inert : active).add(what);
                }
            }
        }
        if (!inert.isEmpty() && active.isEmpty()) {
            line(
                    "**The cache settings had no effect in this run**: with "
                            + cachedSettings()
                            + " every read still reached the server (read RPCs per 1,000 reads,"
                            + " cached vs cache=none: "
                            + String.join("; ", inert)
                            + "). This backend build ignores the `taishan.cache.*` keys (Flink's"
                            + " `Configuration` ignores keys that no option reads), so those"
                            + " columns measure Taishan without a cache once more.");
        } else if (!inert.isEmpty()) {
            line(
                    "Cached runs whose reads all still reached the server: "
                            + String.join("; ", inert)
                            + ". Cached runs that saved reads: "
                            + String.join("; ", active)
                            + ".");
        } else if (!active.isEmpty()) {
            line("Read RPCs per 1,000 reads, cached vs cache=none: " + String.join("; ", active));
        }
        line("");
    }

    private void targets() {
        line("### Issue 7's targets, from this run");
        line("");
        line("| target | measured | met |");
        line("|---|---|---|");
        target(
                "warm-cache value/map get ≥ 2× RocksDB",
                TAISHAN_ALL,
                List.of("valueGet", "mapGet"),
                accesses(),
                2.0);
        target(
                "updates and list appends ≥ 1× RocksDB (cache=all)",
                TAISHAN_ALL,
                List.of("valueUpdate", "mapUpdate", "listAppend"),
                accesses(),
                1.0);
        target(
                "cache at 10% of the state, Zipf: reads ≥ 1× RocksDB",
                TAISHAN_10PCT, List.of("valueGet", "mapGet", "listGet"), List.of("ZIPF"), 1.0);
        target(
                "cache at 10% of the state and a local disk tier holding it, Zipf: reads ≥ 1×"
                        + " RocksDB",
                TAISHAN_10PCT_DISK, List.of("valueGet", "mapGet", "listGet"), List.of("ZIPF"), 1.0);
        target(
                "the same, uniform: reads ≥ 0.5× RocksDB",
                TAISHAN_10PCT_DISK,
                List.of("valueGet", "mapGet", "listGet"),
                List.of("UNIFORM"),
                0.5);
        absentTarget();
        line(
                "| loopback `Get` p50 at least halved from 134 µs | not measured here:"
                        + " `bin/taishan-kv-bench` | – |");
        line("");
    }

    private void target(
            String what,
            String variant,
            List<String> benchmarks,
            List<String> accesses,
            double atLeast) {
        List<String> measured = new ArrayList<>();
        boolean met = true;
        boolean any = false;
        for (String access : accesses) {
            for (String benchmark : benchmarks) {
                Optional<JmhResult> r = find(benchmark, access, variant);
                Optional<Double> ratio = r.flatMap(x -> vsRocksDb(x).value());
                if (ratio.isPresent()) {
                    any = true;
                    met &= ratio.get() >= atLeast;
                    measured.add(benchmark + " " + access + " " + ratio(ratio.get()));
                }
            }
        }
        line(
                "| "
                        + what
                        + " | "
                        + (any ? String.join(", ", measured) : "not in this run")
                        + " | "
                        + (any ? (met ? "yes" : "**no**") : "–")
                        + " |");
    }

    private void absentTarget() {
        List<String> measured = new ArrayList<>();
        boolean met = true;
        boolean any = false;
        for (String access : accesses()) {
            for (String variant : TAISHAN_VARIANTS) {
                Optional<JmhResult> contains = find("mapContains", access, variant);
                if (contains.isPresent()) {
                    double share = contains.get().readRpcsPerThousand() / 10;
                    any = true;
                    met &= share <= 1.0;
                    measured.add(
                            String.format(
                                    Locale.ROOT,
                                    "mapContains %s %s %.1f%%",
                                    access,
                                    variant,
                                    share));
                }
                Optional<JmhResult> restore = find(RESTORE, access, variant);
                if (restore.isPresent() && restore.get().ops() > 0) {
                    double share = 100 * restore.get().readRpcs() / restore.get().ops();
                    any = true;
                    met &= share <= 1.0;
                    measured.add(
                            String.format(
                                    Locale.ROOT,
                                    "after restore %s %s %.1f%%",
                                    access,
                                    variant,
                                    share));
                }
            }
        }
        line(
                "| absent-key lookups reaching the server ≤ 1%, also right after a restore | "
                        + (any ? String.join(", ", measured) : "not in this run")
                        + " | "
                        + (any ? (met ? "yes" : "**no**") : "–")
                        + " |");
    }

    // ---- formatting

    static String scoreText(JmhResult r) {
        String score = number(r.score());
        return Double.isNaN(r.scoreError()) ? score : score + " ± " + number(r.scoreError());
    }

    /** Three significant digits, thousands separated. */
    static String number(double value) {
        double magnitude = Math.abs(value);
        if (magnitude >= 100) {
            return String.format(Locale.ROOT, "%,.0f", value);
        }
        if (magnitude >= 10) {
            return String.format(Locale.ROOT, "%.1f", value);
        }
        if (magnitude >= 1) {
            return String.format(Locale.ROOT, "%.2f", value);
        }
        if (magnitude == 0) {
            return "0";
        }
        return String.format(Locale.ROOT, "%.3g", value);
    }

    static String ratio(double value) {
        return number(value) + "×";
    }

    static String numberOrDash(double value) {
        return Double.isNaN(value) ? "–" : number(value);
    }

    private void line(String text) {
        md.append(text).append('\n');
    }

    List<JmhResult> results() {
        return results;
    }
}
