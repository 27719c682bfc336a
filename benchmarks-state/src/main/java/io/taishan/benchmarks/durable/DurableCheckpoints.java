package io.taishan.benchmarks.durable;

import io.taishan.benchmarks.job.Machine;
import io.taishan.benchmarks.keygroups.CellResult;
import io.taishan.benchmarks.keygroups.CellResult.PhaseResult;
import io.taishan.benchmarks.keygroups.CellResult.Repetition;
import io.taishan.benchmarks.keygroups.Footprint;
import io.taishan.benchmarks.keygroups.OperatorUnderTest;
import io.taishan.benchmarks.keygroups.PhaseMeasure;
import io.taishan.benchmarks.keygroups.ScalingData;
import io.taishan.benchmarks.state.BackendSettings;
import io.taishan.benchmarks.state.BackendUnderTest;
import io.taishan.benchmarks.state.BenchmarkBackendProvider;
import io.taishan.benchmarks.state.ReadCache;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobID;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointStorageAccess;
import org.apache.flink.runtime.state.CheckpointStorageLocation;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SharedStateRegistry;
import org.apache.flink.runtime.state.SharedStateRegistryImpl;
import org.apache.flink.runtime.state.storage.FileSystemCheckpointStorage;
import org.apache.flink.util.TimeUtils;

/**
 * One cell of the durable-checkpoint benchmark in this JVM: one backend of this classpath, one
 * state size. A keyed operator (the key-group harness's {@link OperatorUnderTest} and {@link
 * ScalingData}) loads the state, takes a first checkpoint, then {@code --checkpoints} more, each
 * after a change round that rewrites the same number of keys (none rewritten before); every
 * checkpoint goes to {@code file://} checkpoint storage in the cell's directory, and the
 * JobManager's part (shared-state registry, completion, the subsumed checkpoint discarded) is done
 * here as the key-group harness does it. Then the subtasks are lost and restored from the last
 * checkpoint twice: on the same node, then after the node that held the state was lost with its
 * disk ({@link BackendUnderTest#loseNode}; for a backend without one, the second restore is the
 * same as the first: Flink's RocksDB downloads at every restore).
 *
 * <p>Per checkpoint: its time from {@code snapshot(...)} until the future's result (the "sync" part
 * until {@code snapshot} returned; "notify": the completion, untimed), the handles' {@code
 * stateSize} and {@code checkpointedSize} (what this checkpoint uploaded, as Flink's UI shows it),
 * the bytes and files new in checkpoint storage, the server calls, and the Taishan backend's own
 * upload gauges. Per restore: its time until every subtask read one key back right, the bytes
 * downloaded (Taishan's {@code restoreDownloadedBytes} gauge; RocksDB: its handles' whole state
 * size, which its incremental restore copies), then a sample of keys checked. Result: {@link
 * CellResult} JSON with one repetition, written after every phase.
 *
 * <pre>
 * DurableCheckpoints --backend TAISHAN_DURABLE|ROCKSDB --state-mib N --out FILE
 *     [--value-bytes 1024] [--change-percent 1] [--checkpoints 5] [--key-groups 128]
 *     [--parallelism 1] [--verify 500] [--phase-timeout 15m] [--work DIR]
 * </pre>
 */
public final class DurableCheckpoints {
    /** Phase names; a checkpoint's and a change's carry their number. */
    public static final String OPEN = "open";

    public static final String LOAD = "load";
    public static final String CHECKPOINT = "checkpoint ";
    public static final String CHANGE = "change ";
    public static final String FAILOVER = "failover";
    public static final String RESTORE_LOCAL = "restore";
    public static final String NODE_LOSS = "node loss";
    public static final String RESTORE_AFTER_LOSS = "restore after node loss";
    public static final String TEARDOWN = "teardown";

    /** Size names of a checkpoint or restore phase, beyond the key-group harness's. */
    public static final String NEW_BYTES = "newBytes";

    public static final String NEW_FILES = "newFiles";
    public static final String DOWNLOADED_BYTES = "downloadedBytes";
    public static final String NODE_LOST = "nodeLost";

    private static final String GAUGES = "taishan.";
    private static final List<String> UPLOAD_GAUGES =
            List.of(
                    "durableUploadedBytes",
                    "durableUploadedFiles",
                    "durableReusedFiles",
                    "durableReusedBytes");
    private static final String RESTORE_DOWNLOADED = "restoreDownloadedBytes";
    private static final Duration PROGRESS_EVERY = Duration.ofSeconds(30);

    private final String backend;
    private final int keyGroups;
    private final int parallelism;
    private final ScalingData data;
    private final int checkpoints;
    private final Duration phaseTimeout;
    private final Path out;
    private final Path work;

    private final ExecutorService phaseThread =
            Executors.newSingleThreadExecutor(
                    task -> {
                        Thread t = new Thread(task, "phase");
                        t.setDaemon(true);
                        return t;
                    });
    private final ExecutorService subtaskThreads =
            Executors.newCachedThreadPool(
                    task -> {
                        Thread t = new Thread(task, "subtask");
                        t.setDaemon(true);
                        return t;
                    });
    private final List<PhaseResult> phases = new ArrayList<>();
    private final String loadAverageStart = Machine.loadAverage();
    private final Instant started = Instant.now();
    private final JobID jobId = new JobID();
    private final OperatorID operatorId = new OperatorID();
    private final SharedStateRegistry registry = new SharedStateRegistryImpl();
    private String description = "";
    private String stateProcess = "";
    @Nullable private String failure;
    @Nullable private BackendUnderTest under;
    @Nullable private OperatorUnderTest operator;
    private CheckpointStorageAccess storage;
    private Path checkpointDir;

    private DurableCheckpoints(Map<String, String> opts) throws IOException {
        backend = opts.get("backend");
        keyGroups = Integer.parseInt(opts.get("key-groups"));
        parallelism = Integer.parseInt(opts.get("parallelism"));
        int valueBytes = Integer.parseInt(opts.get("value-bytes"));
        long stateBytes = (long) (Double.parseDouble(opts.get("state-mib")) * (1 << 20));
        int keys = Math.toIntExact(stateBytes / valueBytes);
        int changed =
                (int)
                        Math.max(
                                1,
                                Math.round(
                                        keys
                                                * Double.parseDouble(opts.get("change-percent"))
                                                / 100));
        data = new ScalingData(keys, valueBytes, 1, changed, Integer.parseInt(opts.get("verify")));
        checkpoints = Integer.parseInt(opts.get("checkpoints"));
        phaseTimeout = TimeUtils.parseDuration(opts.get("phase-timeout"));
        out = Path.of(opts.get("out")).toAbsolutePath();
        work =
                opts.get("work").isEmpty()
                        ? Files.createTempDirectory("taishan-durable-checkpoints")
                        : Files.createDirectories(Path.of(opts.get("work")));
        if (checkpoints < 0 || checkpoints >= keys / changed) {
            throw new IllegalArgumentException(
                    "need 0 <= checkpoints < keys / changed keys (rounds of distinct keys)");
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new LinkedHashMap<>();
        opts.put("backend", "");
        opts.put("state-mib", "256");
        opts.put("value-bytes", "1024");
        opts.put("change-percent", "1");
        opts.put("checkpoints", "5");
        opts.put("key-groups", "128");
        opts.put("parallelism", "1");
        opts.put("verify", "500");
        opts.put("phase-timeout", "15m");
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
        DurableCheckpoints cell = new DurableCheckpoints(opts);
        int status = 0;
        try {
            cell.run();
        } catch (Throwable e) {
            e.printStackTrace();
            status = 1;
        }
        // Flink and gRPC leave non-daemon threads behind; the result is written.
        System.exit(status);
    }

    private void run() throws Exception {
        BenchmarkBackendProvider.forBackend(backend);
        try {
            phases();
        } catch (PhaseFailed e) {
            // recorded; what was opened is closed below
        } catch (PhaseTimedOut e) {
            // The stuck phase may hold the backend: what was measured is written, the JVM ends.
            write();
            System.out.println(backend + " " + mib() + " MiB: " + failure + " -> " + out);
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }
        try {
            phase(TEARDOWN, m -> closeAll());
        } catch (PhaseFailed e) {
            // recorded
        }
        write();
        progress(
                "cell done in %.1f s%s",
                Duration.between(started, Instant.now()).toMillis() / 1e3,
                failure == null ? "" : "; stopped at " + failure);
        System.out.println(
                backend
                        + " "
                        + mib()
                        + " MiB: "
                        + (failure == null ? "ok" : failure)
                        + " -> "
                        + out);
    }

    private void phases() throws Exception {
        Path dir = Files.createDirectories(work.resolve("cell"));
        checkpointDir = Files.createDirectories(dir.resolve("checkpoints"));
        phase(
                OPEN,
                m -> {
                    // A server of the cell's own (no shared home): the cell may lose its node.
                    under =
                            BenchmarkBackendProvider.forBackend(backend)
                                    .open(
                                            backend,
                                            new BackendSettings(
                                                    ReadCache.of(ReadCache.NONE, 0), dir));
                    description = under.description();
                    stateProcess = under.stateHome().process();
                    storage =
                            new FileSystemCheckpointStorage(checkpointDir.toUri())
                                    .createCheckpointStorage(jobId);
                    storage.initializeBaseLocationsForCheckpoint();
                    operator = newOperator(dir);
                    m.start();
                    m.part("create", operator.open(List.of(), 0));
                    m.stop();
                    m.rpcs(operator);
                });
        phase(
                LOAD,
                m -> {
                    m.from(operator);
                    operator.load();
                    m.stop();
                    m.rpcs(operator);
                });
        OperatorUnderTest.Checkpoint last = checkpoint(1, null);
        for (int round = 0; round < checkpoints; round++) {
            int r = round;
            phase(
                    CHANGE + (round + 1),
                    m -> {
                        m.from(operator);
                        operator.change(r);
                        m.stop();
                        m.rpcs(operator);
                    });
            last = checkpoint(round + 2, last);
        }
        phase(
                FAILOVER,
                m -> {
                    operator.dispose();
                    m.stop();
                    operator = null;
                });
        restore(RESTORE_LOCAL, dir, last);
        boolean[] lost = new boolean[1];
        phase(
                NODE_LOSS,
                m -> {
                    lost[0] = under.loseNode();
                    m.stop();
                    m.size(NODE_LOST, lost[0] ? 1 : 0);
                });
        restore(RESTORE_AFTER_LOSS, dir, last);
    }

    private OperatorUnderTest newOperator(Path dir) {
        return new OperatorUnderTest(
                under, dir, jobId, operatorId, keyGroups, parallelism, data, subtaskThreads);
    }

    /**
     * Checkpoint {@code id}: timed from {@code snapshot(...)} until every subtask's future gave its
     * result; then, untimed, what the JobManager and the tasks do once it is complete.
     */
    private OperatorUnderTest.Checkpoint checkpoint(
            long id, @Nullable OperatorUnderTest.Checkpoint previous) throws Exception {
        OperatorUnderTest.Checkpoint[] result = new OperatorUnderTest.Checkpoint[1];
        phase(
                CHECKPOINT + id,
                m -> {
                    m.from(operator);
                    CheckpointStorageLocation location =
                            storage.initializeLocationForCheckpoint(id);
                    CheckpointOptions options =
                            new CheckpointOptions(
                                    CheckpointType.CHECKPOINT, location.getLocationReference());
                    Map<Path, Long> before = files(checkpointDir);
                    m.start();
                    OperatorUnderTest.Checkpoint checkpoint =
                            operator.checkpoint(
                                    id,
                                    storage.resolveCheckpointStorageLocation(
                                            id, location.getLocationReference()),
                                    options);
                    m.stop();
                    m.part("sync", checkpoint.syncNanos());
                    long newBytes = 0;
                    long newFiles = 0;
                    for (Map.Entry<Path, Long> file : files(checkpointDir).entrySet()) {
                        if (!before.containsKey(file.getKey())) {
                            newBytes += file.getValue();
                            newFiles++;
                        }
                    }
                    long notifyStart = System.nanoTime();
                    for (KeyedStateHandle handle : checkpoint.handles()) {
                        handle.registerSharedStates(registry, id);
                    }
                    registry.checkpointCompleted(id);
                    operator.notifyComplete(id, previous == null ? 0 : previous.id());
                    if (previous != null) {
                        for (KeyedStateHandle handle : previous.handles()) {
                            handle.discardState();
                        }
                        registry.unregisterUnusedState(id);
                    }
                    m.part("notify", System.nanoTime() - notifyStart);
                    m.rpcs(operator);
                    long stateSize = 0;
                    long checkpointed = 0;
                    for (KeyedStateHandle handle : checkpoint.handles()) {
                        stateSize += handle.getStateSize();
                        checkpointed += handle.getCheckpointedSize();
                    }
                    m.size("stateSize", stateSize);
                    m.size("checkpointedSize", checkpointed);
                    m.size(NEW_BYTES, newBytes);
                    m.size(NEW_FILES, newFiles);
                    for (String gauge : UPLOAD_GAUGES) {
                        long value = operator.gauge(GAUGES + gauge);
                        if (value >= 0) {
                            m.size(gauge, value);
                        }
                    }
                    long[] disk = Footprint.disk(checkpointDir);
                    m.size("checkpointDirBytes", disk[0]);
                    m.size("checkpointDirFiles", disk[1]);
                    result[0] = checkpoint;
                });
        return result[0];
    }

    /**
     * New subtasks from the handles of {@code checkpoint}: timed until each has read one of its
     * keys back right; then, untimed, a sample of keys checked, and the subtasks lost again.
     */
    private void restore(String name, Path dir, OperatorUnderTest.Checkpoint checkpoint)
            throws Exception {
        phase(
                name,
                m -> {
                    OperatorUnderTest restored = newOperator(dir);
                    operator = restored;
                    m.start();
                    long created = restored.open(checkpoint.handles(), checkpoints);
                    m.stop();
                    m.part("create", created);
                    m.rpcs(restored);
                    long downloaded = restored.gauge(GAUGES + RESTORE_DOWNLOADED);
                    if (downloaded < 0) {
                        // No gauge: the backend copies every file of its handles.
                        downloaded =
                                checkpoint.handles().stream()
                                        .mapToLong(KeyedStateHandle::getStateSize)
                                        .sum();
                    }
                    m.size(DOWNLOADED_BYTES, downloaded);
                    m.footprint();
                    long verifyStart = System.nanoTime();
                    m.size("keysVerified", restored.verify(data.sample(), checkpoints));
                    m.part("verify", System.nanoTime() - verifyStart);
                    long disposeStart = System.nanoTime();
                    restored.dispose();
                    operator = null;
                    m.part("dispose", System.nanoTime() - disposeStart);
                });
    }

    private void closeAll() throws Exception {
        Exception first = null;
        if (operator != null) {
            try {
                operator.dispose();
            } catch (Exception e) {
                first = e;
            }
            operator = null;
        }
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

    /** Regular files under {@code dir} with their sizes. */
    private static Map<Path, Long> files(Path dir) throws IOException {
        Map<Path, Long> files = new HashMap<>();
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path file : walk.filter(Files::isRegularFile).toList()) {
                try {
                    files.put(file, Files.size(file));
                } catch (IOException e) {
                    // deleted while walked: not there
                }
            }
        }
        return files;
    }

    /** Runs {@code body} on the phase thread under the phase timeout and records its result. */
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
                    record(name, CellResult.TIMED_OUT, "no result within " + phaseTimeout, m);
                    throw new PhaseTimedOut();
                }
                progress("%s still running after %.0f s", name, (System.nanoTime() - start) / 1e9);
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                record(name, CellResult.FAILED, String.valueOf(cause), m);
                cause.printStackTrace();
                throw new PhaseFailed();
            }
        }
        m.footprintIfAbsent();
        record(name, CellResult.OK, null, m);
    }

    private void record(String name, String outcome, @Nullable String reason, PhaseMeasure m)
            throws IOException {
        PhaseResult result = m.result(name, outcome, reason);
        phases.add(result);
        if (!result.ok() && failure == null) {
            failure = name + ": " + outcome + ": " + reason;
        }
        progress(
                "%s: %s %,.1f ms %s; %,d RPCs %s; %s",
                name,
                outcome,
                result.millis(),
                result.parts(),
                result.rpcTotal(),
                result.rpcs(),
                result.sizes());
        write();
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

    private long mib() {
        return (long) data.keys * data.valueBytes >> 20;
    }

    private void write() throws IOException {
        Files.createDirectories(out.getParent());
        new CellResult(
                        backend,
                        description,
                        stateProcess,
                        keyGroups,
                        parallelism,
                        parallelism,
                        String.format(
                                Locale.ROOT,
                                "%s; %d checkpoints after the first, each after a change round of"
                                        + " %,d keys not changed before",
                                data.describe(),
                                checkpoints,
                                data.changed),
                        new CellResult.Settings(
                                data.keys,
                                data.valueBytes,
                                data.mapEntries,
                                data.changed,
                                data.verify,
                                1,
                                phaseTimeout.toSeconds()),
                        Runtime.getRuntime().availableProcessors(),
                        loadAverageStart,
                        Machine.loadAverage(),
                        started.toString(),
                        Duration.between(started, Instant.now()).toMillis() / 1e3,
                        List.of(new Repetition(1, false, List.copyOf(phases))),
                        failure)
                .write(out);
    }

    private void progress(String format, Object... args) {
        System.err.printf(
                Locale.ROOT,
                "[durable-checkpoints %s %,d MiB, %.1f s] %s%n",
                backend,
                mib(),
                Duration.between(started, Instant.now()).toMillis() / 1e3,
                String.format(Locale.ROOT, format, args));
    }
}
