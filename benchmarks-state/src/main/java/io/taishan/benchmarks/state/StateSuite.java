package io.taishan.benchmarks.state;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatFactory;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Runs the suite on every backend of this classpath in one JVM, one JMH run per benchmark and
 * backend, each in its own fork, and writes all results into one JMH JSON file.
 *
 * <p>JMH's own command line runs the cross product of all parameters; this runs the cache sizes
 * only on a backend that has a cache, and each benchmark on all backends before the next benchmark,
 * so the heap baseline runs minutes, not an hour, from the runs it normalises on a busy machine.
 *
 * <pre>
 * StateSuite --json FILE [--backends HASHMAP,TAISHAN] [--caches none,all,10pct]
 *            [--access UNIFORM,ZIPF] [--keys 500000] [--benchmarks valueGet,...] [-- JMH options]
 * StateSuite --list      # the default benchmarks, one per line
 * </pre>
 *
 * The JMH options (e.g. {@code -wi 1 -i 1 -w 1s -r 1s}) apply to every run; they must not name
 * benchmarks. Exits 1 when a run produced no result, after running all the others.
 */
public final class StateSuite {
    /** Issue 7's set, in the order run; other methods of the suite can be named. */
    static final Map<String, Class<?>> DEFAULT_BENCHMARKS = new LinkedHashMap<>();

    static {
        DEFAULT_BENCHMARKS.put("valueGet", ValueStateBenchmark.class);
        DEFAULT_BENCHMARKS.put("valueUpdate", ValueStateBenchmark.class);
        DEFAULT_BENCHMARKS.put("mapGet", MapStateBenchmark.class);
        DEFAULT_BENCHMARKS.put("mapUpdate", MapStateBenchmark.class);
        DEFAULT_BENCHMARKS.put("mapContains", MapStateBenchmark.class);
        DEFAULT_BENCHMARKS.put("listAppend", ListStateBenchmark.class);
        DEFAULT_BENCHMARKS.put("listGet", ListStateBenchmark.class);
        DEFAULT_BENCHMARKS.put("absentLookupsAfterRestore", RestoreBenchmark.class);
    }

    private static final Map<String, Class<?>> ALL_BENCHMARKS = new LinkedHashMap<>();

    static {
        ALL_BENCHMARKS.putAll(DEFAULT_BENCHMARKS);
        ALL_BENCHMARKS.put("valueAdd", ValueStateBenchmark.class);
        ALL_BENCHMARKS.put("mapAdd", MapStateBenchmark.class);
        ALL_BENCHMARKS.put("mapIterator", MapStateBenchmark.class);
        ALL_BENCHMARKS.put("listAdd", ListStateBenchmark.class);
        // Flink 2's asynchronous State V2 API: compiled only by the Flink 2 benchmark modules.
        try {
            ALL_BENCHMARKS.put(
                    "asyncValueGet",
                    Class.forName("io.taishan.benchmarks.state.AsyncValueStateBenchmark"));
        } catch (ClassNotFoundException flink1) {
            // Flink 1.20: no asynchronous state.
        }
    }

    private StateSuite() {}

    public static void main(String[] args) throws Exception {
        Path json = null;
        List<String> backends = new ArrayList<>(BenchmarkBackendProvider.available());
        List<String> caches = List.of(ReadCache.NONE, ReadCache.ALL, ReadCache.TEN_PERCENT);
        List<String> access = List.of(KeyAccess.UNIFORM.name(), KeyAccess.ZIPF.name());
        List<String> benchmarks = new ArrayList<>(DEFAULT_BENCHMARKS.keySet());
        String keys = null;
        String[] jmhArgs = new String[0];
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--json" -> json = Path.of(args[++i]);
                case "--backends" -> backends = split(args[++i]);
                case "--caches" -> caches = split(args[++i]);
                case "--access" -> access = split(args[++i]);
                case "--benchmarks" -> benchmarks = split(args[++i]);
                case "--keys" -> keys = args[++i];
                case "--list" -> {
                    // For scripts: the default set, in the order run.
                    DEFAULT_BENCHMARKS.keySet().forEach(System.out::println);
                    return;
                }
                case "--" -> {
                    jmhArgs = Arrays.copyOfRange(args, i + 1, args.length);
                    i = args.length;
                }
                default -> usage("unknown argument " + args[i]);
            }
        }
        if (json == null) {
            usage("--json FILE is required");
        }
        // HashMap first: each benchmark's baseline, then the backends it normalises.
        backends.sort((a, b) -> Boolean.compare(!isHashMap(a), !isHashMap(b)));
        CommandLineOptions jmh = parse(jmhArgs);

        List<RunResult> results = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        for (String benchmark : benchmarks) {
            Class<?> type = ALL_BENCHMARKS.get(benchmark);
            if (type == null) {
                usage("no benchmark " + benchmark + "; the suite has " + ALL_BENCHMARKS.keySet());
            }
            for (String backend : backends) {
                boolean cached = BenchmarkBackendProvider.forBackend(backend).hasReadCache(backend);
                ChainedOptionsBuilder options =
                        new OptionsBuilder()
                                .parent(jmh)
                                .include(
                                        "^" + Pattern.quote(type.getName() + "." + benchmark) + "$")
                                .param("backend", backend)
                                .param(
                                        "cache",
                                        cached
                                                ? caches.toArray(String[]::new)
                                                : new String[] {ReadCache.NONE})
                                .param("access", access.toArray(String[]::new));
                if (keys != null) {
                    options.param("setupKeyCount", keys);
                }
                Collection<RunResult> run;
                try {
                    run = new Runner(options.build()).run();
                } catch (RunnerException e) {
                    e.printStackTrace();
                    run = List.of();
                }
                if (run.isEmpty()) {
                    failed.add(benchmark + " on " + backend);
                }
                results.addAll(run);
                // Written after every run, so an interrupted suite keeps what it measured.
                Files.createDirectories(json.toAbsolutePath().getParent());
                ResultFormatFactory.getInstance(ResultFormatType.JSON, json.toString())
                        .writeOut(results);
            }
        }
        System.out.println("# " + results.size() + " results in " + json);
        if (!failed.isEmpty()) {
            System.out.println("# no result for: " + String.join(", ", failed));
            System.exit(1);
        }
    }

    private static boolean isHashMap(String backend) {
        return backend.equals(HashMapBackendProvider.HASHMAP);
    }

    private static List<String> split(String list) {
        return new ArrayList<>(Arrays.asList(list.split(",")));
    }

    private static CommandLineOptions parse(String[] jmhArgs) {
        try {
            CommandLineOptions options = new CommandLineOptions(jmhArgs);
            if (!options.getIncludes().isEmpty()) {
                usage("JMH options after -- must not name benchmarks: use --benchmarks");
            }
            return options;
        } catch (CommandLineOptionException e) {
            usage("JMH options: " + e.getMessage());
            throw new AssertionError(e);
        }
    }

    private static void usage(String problem) {
        System.err.println(problem);
        System.err.println(
                "usage: StateSuite --json FILE [--backends A,B] [--caches none,all,10pct]"
                        + " [--access UNIFORM,ZIPF] [--keys N] [--benchmarks b1,b2]"
                        + " [-- JMH options]");
        System.exit(2);
    }
}
