package io.taishan.benchmarks.state;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.RunnableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.KeyedStateBackendParametersImpl;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.Snapshotable;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStreamFactory;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.util.FileUtils;
import org.apache.flink.util.IOUtils;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The method of Flink's own state benchmarks ({@code org.apache.flink.state.benchmark} in
 * flink-benchmarks): one thread on a {@code Long}-keyed backend, {@link VoidNamespace}, keys loaded
 * before the measurement, throughput in operations per millisecond; the backend is the JMH
 * parameter {@code backend}, made by whichever {@link BenchmarkBackendProvider} on the classpath
 * knows it.
 *
 * <p>Differences from Flink's suite, each deliberate:
 *
 * <ul>
 *   <li>{@value #NUMBER_OF_KEY_GROUPS} key groups, all owned by the one backend (Flink's suite has
 *       2): a remote backend's shards are its key groups, and a real job has many.
 *   <li>Keys follow a pre-drawn uniform or Zipf sequence ({@link KeyAccess}) instead of Flink's
 *       per-invocation random pick, and one invocation performs {@value #OPS_PER_INVOCATION}
 *       operations ({@code @OperationsPerInvocation}): JMH warns that a per-invocation setup
 *       distorts calls far under a millisecond, and it would tax the heap baseline most.
 *   <li>One fork, 10 warm-up and 5 measured iterations of 1 s (Flink: 3 forks, 10 + 10 of 10 s), to
 *       fit a 2-core machine. Ten seconds of warm-up is what a remote read needs before two JVMs
 *       (the task's and the kv-server's) have compiled the RPC path.
 * </ul>
 *
 * <p>After every invocation the server calls made so far are read from the backend's metrics into
 * {@link RpcCounters}, so every result carries its RPCs next to its score.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "-Xms2g",
            "-Xmx2g",
            "-XX:+UseG1GC",
            // Flink's Java 17 list (flink-dist): Kryo paths of Flink need it.
            "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/java.util=ALL-UNNAMED",
            "--add-opens=java.base/java.io=ALL-UNNAMED",
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
            "--add-opens=java.base/java.net=ALL-UNNAMED",
            "--add-opens=java.base/java.text=ALL-UNNAMED",
            "--add-opens=java.base/java.time=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED"
        })
@Warmup(iterations = 10, time = 1)
@Measurement(iterations = 5, time = 1)
public abstract class StateBenchmarkBase {
    /** Operations per benchmark invocation; every score is per operation. */
    public static final int OPS_PER_INVOCATION = 100;

    /** As {@code pipeline.max-parallelism: 128}; the backend owns them all. */
    public static final int NUMBER_OF_KEY_GROUPS = 128;

    /** A value of {@link BenchmarkBackendProvider#available()} on this classpath. */
    @Param({HashMapBackendProvider.HASHMAP})
    public String backend;

    /** {@link ReadCache}: {@code none}, {@code all}, {@code 10pct}; only for a backend with one. */
    @Param({ReadCache.NONE})
    public String cache;

    @Param({"UNIFORM"})
    public KeyAccess access;

    /** Keys loaded before measuring, as Flink's {@code SETUP_KEY_COUNT}. */
    @Param({"500000"})
    public int setupKeyCount;

    BenchmarkKeys keys;
    KeyedStateBackend<Long> keyedStateBackend;

    private BackendUnderTest underTest;
    private Path workDir;
    private final JobID jobId = new JobID();

    /** The form a task gives: {@code <operator>_<OperatorID>_(i/p)}. */
    private final String operatorIdentifier = "StateBenchmark_" + new OperatorID() + "_(1/1)";

    @Nullable private CheckpointableKeyedStateBackend<Long> current;
    @Nullable private CapturingMetricGroup metrics;

    /** The CPU clocks of this JVM and of the trial's state process, which a trial keeps. */
    private CpuClocks cpuClocks;

    @Nullable private CloseableRegistry cancelStreamRegistry;

    /** What this benchmark loads, for sizing the read cache. */
    abstract StateSize stateSize();

    /** Called first by each subclass's trial setup: the backend, and a keyed backend on it. */
    final void createBackend() throws Exception {
        openBackendUnderTest();
        keyedStateBackend = openKeyedBackend(List.of());
    }

    /**
     * The trial's backend, without a keyed backend yet: for a subclass that opens another kind of
     * keyed backend from {@link #keyedBackendParameters} (Flink 2's asynchronous one).
     */
    final BackendUnderTest openBackendUnderTest() throws Exception {
        keys = new BenchmarkKeys(setupKeyCount, access);
        workDir = Files.createTempDirectory("taishan-state-bench");
        ReadCache readCache = ReadCache.of(cache, stateSize().estimate(setupKeyCount));
        BenchmarkBackendProvider provider = BenchmarkBackendProvider.forBackend(backend);
        if (readCache.enabled() && !provider.hasReadCache(backend)) {
            throw new IllegalArgumentException(backend + " has no read cache: use cache=none");
        }
        underTest = provider.open(backend, new BackendSettings(readCache, workDir));
        cpuClocks = new CpuClocks(underTest.stateHome().pid());
        System.out.printf("(%s; %s) ", underTest.description(), access);
        return underTest;
    }

    /**
     * A keyed backend of this trial's job and operator, restored from {@code restoreFrom} (as after
     * a failover) when it is not empty; it replaces the current one, which must be disposed.
     */
    final CheckpointableKeyedStateBackend<Long> openKeyedBackend(
            Collection<KeyedStateHandle> restoreFrom) throws Exception {
        if (current != null) {
            throw new IllegalStateException("the previous keyed backend is still open");
        }
        current =
                underTest
                        .stateBackend()
                        .createKeyedStateBackend(keyedBackendParameters(restoreFrom));
        keyedStateBackend = current;
        return current;
    }

    /**
     * What a task hands its backend for this trial's operator, with fresh metrics (which {@link
     * #begin} and {@link #counted} read) and a fresh cancel registry.
     */
    final KeyedStateBackendParametersImpl<Long> keyedBackendParameters(
            Collection<KeyedStateHandle> restoreFrom) {
        metrics = new CapturingMetricGroup();
        cancelStreamRegistry = new CloseableRegistry();
        return new KeyedStateBackendParametersImpl<>(
                BenchmarkTaskEnvironment.create(jobId, workDir.toFile(), underTest.environment()),
                jobId,
                operatorIdentifier,
                LongSerializer.INSTANCE,
                NUMBER_OF_KEY_GROUPS,
                new KeyGroupRange(0, NUMBER_OF_KEY_GROUPS - 1),
                null, // no queryable state, as in Flink's benchmarks
                TtlTimeProvider.DEFAULT,
                metrics,
                restoreFrom,
                cancelStreamRegistry);
    }

    /** Closes the cancel registry of the last {@link #keyedBackendParameters}. */
    final void closeCancelStreamRegistry() {
        IOUtils.closeQuietly(cancelStreamRegistry);
    }

    final void disposeKeyedBackend() {
        if (current != null) {
            current.dispose();
            IOUtils.closeQuietly(current);
            IOUtils.closeQuietly(cancelStreamRegistry);
            current = null;
        }
    }

    /** A checkpoint of the current keyed backend, written under the trial's working directory. */
    final KeyedStateHandle checkpoint(long checkpointId) throws Exception {
        return checkpoint(current, checkpointId);
    }

    /** A checkpoint of {@code backend}, written under the trial's working directory. */
    final KeyedStateHandle checkpoint(
            Snapshotable<SnapshotResult<KeyedStateHandle>> backend, long checkpointId)
            throws Exception {
        Path dir = Files.createDirectories(workDir.resolve("checkpoints"));
        org.apache.flink.core.fs.Path path = new org.apache.flink.core.fs.Path(dir.toUri());
        RunnableFuture<SnapshotResult<KeyedStateHandle>> snapshot =
                backend.snapshot(
                        checkpointId,
                        System.currentTimeMillis(),
                        new FsCheckpointStreamFactory(
                                FileSystem.getLocalFileSystem(), path, path, 4096, 4096),
                        CheckpointOptions.forCheckpointWithDefaultLocation());
        snapshot.run();
        return snapshot.get().getJobManagerOwnedSnapshot();
    }

    /** At the trial's end, first: closes a keyed backend that a subclass opened itself. */
    void closeOwnKeyedBackend() throws Exception {}

    /** Before an iteration's counting starts: what a subclass sets up per iteration. */
    void beforeIteration() throws Exception {}

    /** After an iteration's counting ended. */
    void afterIteration() throws Exception {}

    @Setup(Level.Iteration)
    public final void beginIteration() throws Exception {
        beforeIteration();
    }

    @TearDown(Level.Iteration)
    public final void endIteration() throws Exception {
        afterIteration();
    }

    /**
     * Opens an invocation's count: the first of an iteration reads where the backend's server calls
     * stand. Reading a few counters per invocation of 100 operations costs the heap backend well
     * under 1%, and backends without a server answer at once.
     */
    final void begin(RpcCounters counters) {
        if (!counters.started()) {
            counters.start(underTest.rpcs(metrics), cpuClocks);
        }
    }

    /** Closes an invocation's count: its operations and the server calls made so far. */
    final void counted(RpcCounters counters, int operations) {
        counters.add(operations, underTest.rpcs(metrics), cpuClocks);
    }

    @TearDown
    public void tearDown() throws Exception {
        closeOwnKeyedBackend();
        disposeKeyedBackend();
        if (underTest != null) {
            underTest.close();
            underTest = null;
        }
        if (workDir != null) {
            FileUtils.deleteDirectory(workDir.toFile());
        }
    }

    /** Reported in the JMH log: the setup is outside the measurement but inside the run time. */
    final void report(String what, long startNanos) {
        System.out.printf(
                "(%s: %s in %.1f s) ", backend, what, (System.nanoTime() - startNanos) / 1e9);
    }

    /** Every operation's index into {@link #keys}, counting up. */
    private int cursor;

    final int next() {
        return cursor++ & Integer.MAX_VALUE;
    }

    final <S extends org.apache.flink.api.common.state.State, T> S state(
            StateDescriptor<S, T> descriptor) throws Exception {
        return keyedStateBackend.getPartitionedState(
                VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
    }

    /**
     * Fails unless the state holds exactly {@code expected} keys, then lets the backend settle
     * ({@link BackendUnderTest#loaded}). Taishan applies every queued write before it lists keys,
     * so the loaded state is then in the store and the measured reads go there.
     */
    final void expectLoaded(StateDescriptor<?, ?> descriptor, long expected) throws Exception {
        long found;
        try (Stream<Long> stored =
                keyedStateBackend.getKeys(descriptor.getName(), VoidNamespace.INSTANCE)) {
            found = stored.count();
        }
        if (found != expected) {
            throw new IllegalStateException(
                    backend
                            + ": state '"
                            + descriptor.getName()
                            + "' holds "
                            + found
                            + " keys, expected "
                            + expected);
        }
        underTest.loaded(keyedStateBackend, descriptor);
    }

    static IllegalStateException missing(String what, long key) {
        return new IllegalStateException("no " + what + " for pre-loaded key " + key);
    }
}
