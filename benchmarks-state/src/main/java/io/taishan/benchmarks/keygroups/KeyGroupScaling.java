package io.taishan.benchmarks.keygroups;

import io.taishan.benchmarks.job.Machine;
import io.taishan.benchmarks.keygroups.CellResult.PhaseResult;
import io.taishan.benchmarks.keygroups.CellResult.Repetition;
import io.taishan.benchmarks.state.BackendSettings;
import io.taishan.benchmarks.state.BackendUnderTest;
import io.taishan.benchmarks.state.BenchmarkBackendProvider;
import io.taishan.benchmarks.state.ReadCache;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobID;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.CheckpointStorageLocation;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistry;
import org.apache.flink.runtime.state.SharedStateRegistryImpl;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.util.FileUtils;
import org.apache.flink.util.TimeUtils;

/**
 * One cell of the key-group scaling benchmark in this JVM: one backend of this classpath ({@link
 * BenchmarkBackendProvider}), one number of key groups (the job's max parallelism), one
 * parallelism. Each repetition runs, on a fresh backend (Taishan: a new table on the cell's
 * kv-server child JVM, which every repetition shares as it shares this JVM), the life of one keyed
 * operator: open it new, load the data set, checkpoint, apply the change set, checkpoint again,
 * lose the subtasks (failover), restore them from the second checkpoint, then restore again at
 * another parallelism. The first of several repetitions is a warm-up.
 *
 * <p>Every phase runs under a timeout; a phase that fails or times out ends the cell, which is then
 * reported as such, so that a key-group count the backend cannot handle does not stop the run.
 * Progress goes to stderr; the result to {@code --out} as JSON ({@link CellResult}), written after
 * every repetition. {@code bin/taishan-keygroup-scaling} runs one cell per JVM, alternating the
 * backends' classpaths.
 *
 * <pre>
 * KeyGroupScaling --backend TAISHAN|ROCKSDB|HASHMAP --key-groups N --out FILE
 *     [--parallelism 1] [--rescale-to 2] [--keys 20000] [--changed 2000] [--value-bytes 100]
 *     [--map-entries 4] [--verify 500] [--repetitions 5] [--phase-timeout 5m] [--work DIR]
 * </pre>
 */
public final class KeyGroupScaling {
    private static final Duration PROGRESS_EVERY = Duration.ofSeconds(30);
    private static final Duration CLOSE_AFTER_TIMEOUT = Duration.ofSeconds(90);

    private final String backend;
    private final int keyGroups;
    private final int parallelism;
    private final int rescaleTo;
    private final ScalingData data;
    private final int repetitions;
    private final Duration phaseTimeout;
    private final Path out;
    private final Path work;

    private final ExecutorService phaseThread = Executors.newCachedThreadPool(daemon("phase"));
    private final ExecutorService subtaskThreads = Executors.newCachedThreadPool(daemon("subtask"));
    private final List<Repetition> done = new ArrayList<>();
    private final String loadAverageStart = Machine.loadAverage();
    private final Instant started = Instant.now();
    private String description = "";
    private String stateProcess = "";
    @Nullable private String failure;

    /** The label of progress lines: which cell and repetition. */
    private String label = "";

    private KeyGroupScaling(Map<String, String> opts) throws Exception {
        backend = opts.get("backend");
        keyGroups = Integer.parseInt(opts.get("key-groups"));
        parallelism = Integer.parseInt(opts.get("parallelism"));
        rescaleTo =
                opts.get("rescale-to").isEmpty()
                        ? (parallelism == 1 ? 2 : 1)
                        : Integer.parseInt(opts.get("rescale-to"));
        data =
                new ScalingData(
                        Integer.parseInt(opts.get("keys")),
                        Integer.parseInt(opts.get("value-bytes")),
                        Integer.parseInt(opts.get("map-entries")),
                        Integer.parseInt(opts.get("changed")),
                        Integer.parseInt(opts.get("verify")));
        repetitions = Integer.parseInt(opts.get("repetitions"));
        phaseTimeout = TimeUtils.parseDuration(opts.get("phase-timeout"));
        out = Path.of(opts.get("out")).toAbsolutePath();
        work =
                opts.get("work").isEmpty()
                        ? Files.createTempDirectory("taishan-keygroup-scaling")
                        : Files.createDirectories(Path.of(opts.get("work")));
        if (keyGroups < 1 || parallelism < 1 || parallelism > keyGroups || rescaleTo < 1) {
            throw new IllegalArgumentException(
                    "need 1 <= parallelism <= key groups and rescale-to >= 1");
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new LinkedHashMap<>();
        opts.put("backend", "");
        opts.put("key-groups", "128");
        opts.put("parallelism", "1");
        opts.put("rescale-to", "");
        opts.put("keys", "20000");
        opts.put("changed", "2000");
        opts.put("value-bytes", "100");
        opts.put("map-entries", "4");
        opts.put("verify", "500");
        opts.put("repetitions", "5");
        opts.put("phase-timeout", "5m");
        opts.put("out", "");
        opts.put("work", "");
        for (int i = 0; i < args.length; i++) {
            String key = args[i].replaceFirst("^--", "");
            if (!opts.containsKey(key) || i + 1 >= args.length) {
                System.err.println(
                        "unknown or incomplete option " + args[i] + "; options: " + opts.keySet());
                System.exit(2);
            }
            opts.put(key, args[++i]);
        }
        if (opts.get("backend").isEmpty() || opts.get("out").isEmpty()) {
            System.err.println(
                    "--backend and --out are required; backends on this classpath: "
                            + BenchmarkBackendProvider.available());
            System.exit(2);
        }
        KeyGroupScaling cell = new KeyGroupScaling(opts);
        int status = 0;
        try {
            cell.run();
        } catch (Throwable e) {
            // A fault of the harness, not of a phase: whatever was written stays.
            e.printStackTrace();
            status = 1;
        }
        // Flink and gRPC leave non-daemon threads behind; the result is written.
        System.exit(status);
    }

    private void run() throws Exception {
        // Fails here, before any phase, if this classpath cannot make the backend.
        BenchmarkBackendProvider.forBackend(backend);
        for (int number = 1; number <= repetitions && failure == null; number++) {
            Repetition repetition = repetition(number);
            done.add(repetition);
            write();
        }
        progress(
                "cell done in %s%s",
                seconds(Duration.between(started, Instant.now())),
                failure == null ? "" : "; stopped at " + failure);
        System.out.println(
                backend
                        + " "
                        + keyGroups
                        + " key groups, parallelism "
                        + parallelism
                        + ": "
                        + (failure == null ? "ok" : failure)
                        + " -> "
                        + out);
    }

    private Repetition repetition(int number) throws Exception {
        boolean warmUp = repetitions > 1 && number == 1;
        label =
                String.format(
                        Locale.ROOT,
                        "%s %,d key groups, %d subtask%s, repetition %d/%d%s",
                        backend,
                        keyGroups,
                        parallelism,
                        parallelism == 1 ? "" : "s",
                        number,
                        repetitions,
                        warmUp ? " (warm-up)" : "");
        Path dir = Files.createDirectories(work.resolve("rep-" + number));
        List<PhaseResult> phases = new ArrayList<>();
        Run run = new Run(dir, phases);
        try {
            run.all();
        } catch (PhaseTimedOut e) {
            // The phase's thread may hold the backend forever: record, stop its server, exit.
            done.add(new Repetition(number, warmUp, phases));
            write();
            run.closeQuietly(CLOSE_AFTER_TIMEOUT);
            progress("cell stopped: %s", failure);
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }
        if (failure == null) {
            FileUtils.deleteDirectoryQuietly(dir.toFile());
        } else {
            progress("kept the failed repetition's files in %s", dir);
        }
        return new Repetition(number, warmUp, phases);
    }

    /** One repetition's phases on one backend, recorded into {@code phases}. */
    private final class Run {
        private final Path dir;
        private final List<PhaseResult> phases;
        private final JobID jobId = new JobID();
        private final OperatorID operatorId = new OperatorID();
        private final SharedStateRegistry registry = new SharedStateRegistryImpl();
        @Nullable private BackendUnderTest under;
        @Nullable private OperatorUnderTest writer;
        @Nullable private OperatorUnderTest restored;
        private CheckpointStorageAccess storage;

        Run(Path dir, List<PhaseResult> phases) {
            this.dir = dir;
            this.phases = phases;
        }

        void all() throws Exception {
            try {
                phases();
            } catch (PhaseFailed e) {
                // recorded; what was opened is still closed below
            } catch (PhaseTimedOut e) {
                // No teardown: the stuck phase may hold what it would close.
                throw e;
            }
            teardown();
        }

        private void phases() throws Exception {
            phase(
                    CellResult.START,
                    m -> {
                        under =
                                BenchmarkBackendProvider.forBackend(backend)
                                        .open(
                                                backend,
                                                new BackendSettings(
                                                        ReadCache.of(ReadCache.NONE, 0),
                                                        dir,
                                                        work.resolve("server")));
                        description = under.description();
                        stateProcess = under.stateHome().process();
                        FileSystemCheckpointStorage checkpoints =
                                new FileSystemCheckpointStorage(
                                        Files.createDirectories(dir.resolve("checkpoints"))
                                                .toUri());
                        storage = checkpoints.createCheckpointStorage(jobId);
                        storage.initializeBaseLocationsForCheckpoint();
                        m.stop();
                    });
            writer =
                    new OperatorUnderTest(
                            under,
                            dir,
                            jobId,
                            operatorId,
                            keyGroups,
                            parallelism,
                            data,
                            subtaskThreads);
            phase(
                    CellResult.OPEN,
                    m -> {
                        long created = writer.open(List.of(), false);
                        m.stop();
                        m.part("create", created);
                        m.rpcs(writer);
                    });
            phase(
                    CellResult.LOAD,
                    m -> {
                        m.from(writer);
                        writer.load();
                        m.stop();
                        m.rpcs(writer);
                    });
            OperatorUnderTest.Checkpoint first = checkpoint(CellResult.CHECKPOINT, 1, null);
            phase(
                    CellResult.CHANGE,
                    m -> {
                        m.from(writer);
                        writer.change();
                        m.stop();
                        m.rpcs(writer);
                    });
            OperatorUnderTest.Checkpoint second =
                    checkpoint(CellResult.INCREMENTAL_CHECKPOINT, 2, first);
            phase(
                    CellResult.FAILOVER,
                    m -> {
                        m.from(writer);
                        writer.dispose();
                        m.stop();
                        m.rpcs(writer);
                        writer = null;
                    });
            restore(CellResult.RESTORE, parallelism, second);
            restore(CellResult.RESCALE, rescaleTo, second);
        }

        /**
         * A checkpoint of the writer: timed from {@code snapshot(...)} until its future's result is
         * taken; then, untimed, what the JobManager and the tasks do once it is complete.
         */
        private OperatorUnderTest.Checkpoint checkpoint(
                String name, long id, @Nullable OperatorUnderTest.Checkpoint previous)
                throws Exception {
            OperatorUnderTest.Checkpoint[] result = new OperatorUnderTest.Checkpoint[1];
            phase(
                    name,
                    m -> {
                        m.from(writer);
                        // As the JobManager: a location per checkpoint, its reference sent to
                        // the tasks, which resolve it to their stream factory.
                        CheckpointStorageLocation location =
                                storage.initializeLocationForCheckpoint(id);
                        CheckpointOptions options =
                                new CheckpointOptions(
                                        CheckpointType.CHECKPOINT, location.getLocationReference());
                        CheckpointStreamFactory streams =
                                storage.resolveCheckpointStorageLocation(
                                        id, location.getLocationReference());
                        m.start();
                        OperatorUnderTest.Checkpoint checkpoint =
                                writer.checkpoint(id, streams, options);
                        m.stop();
                        m.part("sync", checkpoint.syncNanos());
                        long notifyStart = System.nanoTime();
                        // The JobManager registers the shared files (RocksDB's incremental
                        // handles name the earlier checkpoint's files by placeholder until then),
                        // then tells the tasks, then drops the checkpoint this one subsumed.
                        for (KeyedStateHandle handle : checkpoint.handles()) {
                            handle.registerSharedStates(registry, id);
                        }
                        registry.checkpointCompleted(id);
                        writer.notifyComplete(id, previous == null ? 0 : previous.id());
                        if (previous != null) {
                            for (KeyedStateHandle handle : previous.handles()) {
                                handle.discardState();
                            }
                            registry.unregisterUnusedState(id);
                        }
                        m.part("notify", System.nanoTime() - notifyStart);
                        m.rpcs(writer);
                        long stateSize = 0;
                        long checkpointed = 0;
                        for (KeyedStateHandle handle : checkpoint.handles()) {
                            stateSize += handle.getStateSize();
                            checkpointed += handle.getCheckpointedSize();
                        }
                        m.size("stateSize", stateSize);
                        m.size("checkpointedSize", checkpointed);
                        long[] disk = Footprint.disk(dir.resolve("checkpoints"));
                        m.size("checkpointDirBytes", disk[0]);
                        m.size("checkpointDirFiles", disk[1]);
                        result[0] = checkpoint;
                    });
            return result[0];
        }

        /**
         * New subtasks of the same job and operator at {@code to} parallelism, from the handles of
         * {@code checkpoint}: timed until each has read one of its keys back right; then, untimed,
         * a sample of keys checked, and the subtasks lost again.
         */
        private void restore(String name, int to, OperatorUnderTest.Checkpoint checkpoint)
                throws Exception {
            phase(
                    name,
                    m -> {
                        restored =
                                new OperatorUnderTest(
                                        under,
                                        dir,
                                        jobId,
                                        operatorId,
                                        keyGroups,
                                        to,
                                        data,
                                        subtaskThreads);
                        m.start();
                        long created = restored.open(checkpoint.handles(), true);
                        m.stop();
                        m.part("create", created);
                        m.rpcs(restored);
                        long verifyStart = System.nanoTime();
                        int verified = restored.verify(data.sample(), true);
                        m.part("verify", System.nanoTime() - verifyStart);
                        m.size("keysVerified", verified);
                        m.footprint();
                        long disposeStart = System.nanoTime();
                        restored.dispose();
                        restored = null;
                        m.part("dispose", System.nanoTime() - disposeStart);
                    });
        }

        private void teardown() throws Exception {
            try {
                phase(
                        CellResult.TEARDOWN,
                        m -> {
                            closeAll();
                            m.stop();
                        });
            } catch (PhaseFailed e) {
                // recorded
            }
        }

        private void closeAll() throws Exception {
            Exception first = null;
            for (OperatorUnderTest operator : new OperatorUnderTest[] {writer, restored}) {
                if (operator != null) {
                    try {
                        operator.dispose();
                    } catch (Exception e) {
                        first = first == null ? e : first;
                    }
                }
            }
            writer = null;
            restored = null;
            if (under != null) {
                try {
                    under.close();
                } catch (Exception e) {
                    first = first == null ? e : first;
                }
                under = null;
            }
            if (first != null) {
                throw first;
            }
        }

        /** After a timeout: stop the backend's server if it goes within {@code wait}. */
        void closeQuietly(Duration wait) {
            Future<?> closing =
                    phaseThread.submit(
                            () -> {
                                if (under != null) {
                                    under.close();
                                }
                                return null;
                            });
            try {
                closing.get(wait.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                progress("closing the backend after the timeout: %s", e);
            }
        }

        /**
         * Runs {@code body} on the phase thread under the phase timeout, reporting progress while
         * it runs, and records its result; the footprint is taken after the body unless it took one
         * itself.
         */
        private void phase(String name, Body body) throws Exception {
            PhaseMeasure m = new PhaseMeasure(() -> under);
            long start = System.nanoTime();
            progress("%s ...", name);
            Future<Void> running =
                    phaseThread.submit(
                            () -> {
                                m.start();
                                body.run(m);
                                return null;
                            });
            long deadline = start + phaseTimeout.toNanos();
            while (true) {
                long left = deadline - System.nanoTime();
                try {
                    running.get(
                            Math.max(1, Math.min(left, PROGRESS_EVERY.toNanos())),
                            TimeUnit.NANOSECONDS);
                    break;
                } catch (TimeoutException e) {
                    if (System.nanoTime() >= deadline) {
                        running.cancel(true);
                        String reason = "no result within " + seconds(phaseTimeout);
                        record(name, CellResult.TIMED_OUT, reason, m);
                        throw new PhaseTimedOut();
                    }
                    progress(
                            "%s still running after %s",
                            name, seconds(Duration.ofNanos(System.nanoTime() - start)));
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    record(name, CellResult.FAILED, reason(cause), m);
                    progress("%s failed:", name);
                    cause.printStackTrace();
                    throw new PhaseFailed();
                }
            }
            m.footprintIfAbsent();
            record(name, CellResult.OK, null, m);
        }

        private void record(String name, String outcome, @Nullable String reason, PhaseMeasure m) {
            if (!CellResult.OK.equals(outcome)) {
                m.footprintIfAbsent();
            }
            PhaseResult result = m.result(name, outcome, reason);
            phases.add(result);
            if (!result.ok() && failure == null) {
                failure = name + ": " + outcome + ": " + reason;
            }
            if (result.ok()) {
                progress("%s", describe(result));
            } else {
                progress("%s %s: %s", name, outcome, reason);
            }
        }
    }

    private interface Body {
        void run(PhaseMeasure m) throws Exception;
    }

    private static final class PhaseFailed extends Exception {
        PhaseFailed() {
            super(null, null, false, false);
        }
    }

    private static final class PhaseTimedOut extends Exception {
        PhaseTimedOut() {
            super(null, null, false, false);
        }
    }

    private void write() throws Exception {
        Files.createDirectories(out.getParent());
        new CellResult(
                        backend,
                        description,
                        stateProcess,
                        keyGroups,
                        parallelism,
                        rescaleTo,
                        data.describe(),
                        new CellResult.Settings(
                                data.keys,
                                data.valueBytes,
                                data.mapEntries,
                                data.changed,
                                data.verify,
                                repetitions,
                                phaseTimeout.toSeconds()),
                        Runtime.getRuntime().availableProcessors(),
                        loadAverageStart,
                        Machine.loadAverage(),
                        started.toString(),
                        Duration.between(started, Instant.now()).toMillis() / 1e3,
                        List.copyOf(done),
                        failure)
                .write(out);
    }

    /** A path of three or more parts: the report keeps its last part. */
    private static final Pattern LONG_PATH = Pattern.compile("(?:/[^/\\s:']+){2,}/([^/\\s:']+)");

    private static final int REASON_HEAD = 150;
    private static final int REASON_TAIL = 250;

    /**
     * The innermost cause's class and message: what the report shows of a failure. Long paths are
     * cut to their last part and a long message keeps its end, where the operating system's reason
     * ("Too many open files") usually stands.
     */
    static String reason(Throwable error) {
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = root.getMessage() == null ? "" : ": " + root.getMessage();
        String outer =
                root == error || error.getMessage() == null
                        ? ""
                        : " (in " + error.getClass().getSimpleName() + ")";
        String text =
                LONG_PATH
                        .matcher(root.getClass().getSimpleName() + message + outer)
                        .replaceAll(".../$1")
                        .replace('\n', ' ');
        return text.length() <= REASON_HEAD + REASON_TAIL
                ? text
                : text.substring(0, REASON_HEAD)
                        + " ... "
                        + text.substring(text.length() - REASON_TAIL);
    }

    private static String describe(PhaseResult r) {
        StringBuilder line =
                new StringBuilder(
                        String.format(Locale.ROOT, "%s: %,.1f ms", r.phase(), r.millis()));
        r.parts()
                .forEach(
                        (name, ms) ->
                                line.append(String.format(Locale.ROOT, ", %s %,.1f ms", name, ms)));
        if (!r.rpcs().isEmpty()) {
            line.append(String.format(Locale.ROOT, "; %,d RPCs %s", r.rpcTotal(), r.rpcs()));
        }
        Footprint f = r.footprint();
        if (f != null) {
            line.append(
                    String.format(
                            Locale.ROOT,
                            "; fds %,d, RSS %,.0f MiB, threads %,d, disk %,.1f MiB in %,d files",
                            f.openFiles(),
                            f.rssBytes() / 1048576.0,
                            f.threads(),
                            f.diskBytes() / 1048576.0,
                            f.files()));
        }
        return line.toString();
    }

    private void progress(String format, Object... args) {
        System.err.printf(
                Locale.ROOT,
                "[keygroup-scaling %s, %s] %s%n",
                label.isEmpty() ? backend : label,
                seconds(Duration.between(started, Instant.now())),
                String.format(Locale.ROOT, format, args));
    }

    private static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.1f s", d.toMillis() / 1e3);
    }

    private static ThreadFactory daemon(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return task -> {
            Thread thread = new Thread(task, prefix + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }
}
