package io.taishan.it;

import static io.taishan.it.Scenarios.SCHEDULE;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.ReferenceRun;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.it.job.KeyFinalState;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.annotation.Nullable;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.CheckpointType;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CheckpointFailureReason;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.CheckpointStatsStatus;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.FailedCheckpointStats;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.ExceptionUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Durable checkpoints while the checkpoint storage fails under a running job, twice: the job's
 * {@code shared/} directory cannot be written (permission denied: its permission bits, or as root,
 * which ignores those, its immutable attribute), then a regular file stands where it was (a path
 * that cannot be created). Each time every checkpoint fails in its asynchronous part, naming the
 * directory and the storage's own error; the job keeps running on its last completed checkpoint;
 * once the directory is back, checkpoints complete again. Every file any completed checkpoint
 * references exists with the size its handle says, no failed one left a {@code _metadata}, and the
 * job ends with exactly the final state of an uninterrupted HashMap run.
 */
class DurableStorageFailureITCase {
    /** Keeps every completed checkpoint, to check them all (the JobManager's own setting). */
    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            ItCluster.extension(
                    new Configuration().set(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 1_000));

    /** Records per split the source emits before the first outage, and between two. */
    private static final long STEP = 600;

    private static final Duration QUIET = Duration.ofMillis(500);

    /** Periodic checkpoints that fail during an outage, besides the one triggered by hand. */
    private static final int FAILED_DURING_OUTAGE = 3;

    /** Checkpoints that complete after an outage before the next step. */
    private static final int COMPLETED_AFTER_OUTAGE = 3;

    @Test
    @Timeout(240)
    void checkpointsFailClearlyWhileTheStorageCannotBeWrittenAndTheJobRunsOn(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (TaishanBackendFixture backend =
                TaishanBackendFixture.startDurable(workDir.resolve("backend"))) {
            JobHarness harness = new JobHarness(cluster, backend, SCHEDULE, workDir);
            Configuration config = new Configuration();
            // However many checkpoints fail, the job must not fail for it.
            config.set(CheckpointingOptions.TOLERABLE_FAILURE_NUMBER, Integer.MAX_VALUE);
            long position = STEP;
            RunningJob job =
                    harness.start(2, Scenarios.AS_FAST_AS_POSSIBLE, null, config, position);
            job.awaitQuietAfter(SCHEDULE.splitCount() * position, QUIET).checkpoint();
            Path jobDir = workDir.resolve("checkpoints").resolve(job.id().toString());
            Path shared = jobDir.resolve("shared");

            Set<Long> seenFailed = new TreeSet<>();
            Set<Long> lastGoodOnes = new TreeSet<>();
            List<String> outages = new ArrayList<>();
            for (Outage.Kind kind : Outage.Kind.values()) {
                position += STEP;
                try (Outage outage = Outage.of(shared, kind)) {
                    if (outage == null) {
                        System.out.println("[storage outage] " + kind + ": cannot be made here");
                        continue;
                    }
                    outages.add(outage.describe());
                    lastGoodOnes.add(
                            checkpointsFailWhileTheJobRunsOn(
                                    cluster, job, outage, position, seenFailed));
                }
                long completed = stats(cluster, job).getCounts().getNumberOfCompletedCheckpoints();
                job.checkpoint();
                awaitCompletedCheckpoints(cluster, job, completed + COMPLETED_AFTER_OUTAGE);
            }
            assertThat(outages).as("outages made").isNotEmpty();
            job.keepRunning(Duration.ofMillis(200));

            Set<Long> failedIds = new TreeSet<>(seenFailed);
            Set<Long> completedIds = new TreeSet<>();
            for (AbstractCheckpointStats checkpoint :
                    stats(cluster, job).getHistory().getCheckpoints()) {
                if (checkpoint.getStatus() == CheckpointStatsStatus.FAILED) {
                    failedIds.add(checkpoint.getCheckpointId());
                } else if (checkpoint.getStatus() == CheckpointStatsStatus.COMPLETED) {
                    completedIds.add(checkpoint.getCheckpointId());
                }
            }
            assertThat(failedIds)
                    .hasSizeGreaterThanOrEqualTo(outages.size() * (1 + FAILED_DURING_OUTAGE));
            for (long id : failedIds) {
                assertThat(jobDir.resolve("chk-" + id).resolve("_metadata"))
                        .as("metadata of failed checkpoint %d", id)
                        .doesNotExist();
            }
            // Every completed checkpoint is retained: those in the history (the latest few) and
            // every other with its _metadata, those before each outage among them.
            try (Stream<Path> dirs = Files.list(jobDir)) {
                dirs.filter(d -> d.getFileName().toString().startsWith("chk-"))
                        .filter(d -> Files.exists(d.resolve("_metadata")))
                        .forEach(
                                d ->
                                        completedIds.add(
                                                Long.parseLong(
                                                        d.getFileName()
                                                                .toString()
                                                                .substring("chk-".length()))));
            }
            assertThat(completedIds)
                    .doesNotContainAnyElementsOf(failedIds)
                    .containsAll(lastGoodOnes);
            long lastOutage = lastGoodOnes.stream().mapToLong(Long::longValue).max().orElseThrow();
            assertThat(completedIds.stream().filter(id -> id > lastOutage))
                    .as("checkpoints completed after the last outage")
                    .hasSizeGreaterThanOrEqualTo(COMPLETED_AFTER_OUTAGE);
            long filesChecked = 0;
            for (long id : completedIds) {
                filesChecked += assertEveryReferencedFileIsWhole(jobDir.resolve("chk-" + id));
            }
            System.out.printf(
                    "[storage outage] %s: %d failed and %d completed checkpoints; %d referenced"
                            + " files checked%n",
                    outages, failedIds.size(), completedIds.size(), filesChecked);

            Map<Long, KeyFinalState> actual = job.releaseSource().awaitFinalStates();
            FinalStates.assertSame(
                    actual, expected, "a durable job through checkpoint storage outages");
        }
    }

    /**
     * During the outage, the source emits up to {@code position}: then each checkpoint has new
     * files to copy into {@code shared/}. A checkpoint triggered by hand fails naming the directory
     * and the storage's own error, periodic ones fail too, none completes, and the job keeps
     * running. Returns the last completed checkpoint, the one from before the outage.
     */
    private static long checkpointsFailWhileTheJobRunsOn(
            MiniCluster cluster, RunningJob job, Outage outage, long position, Set<Long> seenFailed)
            throws Exception {
        System.out.println("[storage outage] " + outage.describe());
        job.holdSourceAt(position).awaitQuietAfter(SCHEDULE.splitCount() * position, QUIET);

        Throwable failure = failedCheckpoint(cluster, job);
        String chain = ExceptionUtils.stringifyException(failure);
        System.out.println("[storage outage] the checkpoint failed with:\n" + chain);
        assertThat(
                        ExceptionUtils.findThrowable(
                                failure,
                                org.apache.flink.runtime.checkpoint.CheckpointException.class))
                .as("a CheckpointException in\n%s", chain)
                .hasValueSatisfying(
                        e ->
                                assertThat(e.getCheckpointFailureReason())
                                        .isEqualTo(
                                                CheckpointFailureReason
                                                        .CHECKPOINT_ASYNC_EXCEPTION));
        assertThat(messages(failure))
                .as("messages of the failure's causes")
                .anySatisfy(
                        m ->
                                assertThat(m)
                                        .contains("could not copy checkpoint")
                                        .contains(outage.dir().toString())
                                        .contains(outage.expectedError()));

        // From here on, every checkpoint started during the outage.
        CheckpointStatsSnapshot atFirstFailure = stats(cluster, job);
        long lastGood =
                atFirstFailure.getHistory().getLatestCompletedCheckpoint().getCheckpointId();
        long completedBefore = atFirstFailure.getCounts().getNumberOfCompletedCheckpoints();
        long failedBefore = atFirstFailure.getCounts().getNumberOfFailedCheckpoints();
        awaitFailedCheckpoints(cluster, job, failedBefore + FAILED_DURING_OUTAGE, seenFailed);
        job.keepRunning(Duration.ofMillis(200));
        CheckpointStatsSnapshot during = stats(cluster, job);
        assertThat(during.getCounts().getNumberOfCompletedCheckpoints())
                .as("checkpoints completed while shared/ could not be written")
                .isEqualTo(completedBefore);
        assertThat(during.getHistory().getLatestCompletedCheckpoint().getCheckpointId())
                .as("the last completed checkpoint, still the one before the outage")
                .isEqualTo(lastGood);
        FailedCheckpointStats latestFailed = during.getHistory().getLatestFailedCheckpoint();
        assertThat(latestFailed.getFailureMessage())
                .as("what Flink's checkpoint history shows for a failed checkpoint")
                .isEqualTo(CheckpointFailureReason.CHECKPOINT_ASYNC_EXCEPTION.message());
        return lastGood;
    }

    /** Triggers a checkpoint that must fail, and returns why. */
    private static Throwable failedCheckpoint(MiniCluster cluster, RunningJob job)
            throws Exception {
        try {
            long id =
                    cluster.triggerCheckpoint(job.id(), CheckpointType.CONFIGURED)
                            .get(2, TimeUnit.MINUTES);
            throw new AssertionError(
                    "checkpoint " + id + " completed while shared/ could not be written");
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    private static List<String> messages(Throwable failure) {
        List<String> messages = new ArrayList<>();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            messages.add(String.valueOf(t.getMessage()));
        }
        return messages;
    }

    private static CheckpointStatsSnapshot stats(MiniCluster cluster, RunningJob job)
            throws Exception {
        return cluster.getExecutionGraph(job.id()).get().getCheckpointStatsSnapshot();
    }

    /** Waits for that many failed checkpoints, noting the ids of those it sees fail. */
    private static void awaitFailedCheckpoints(
            MiniCluster cluster, RunningJob job, long atLeast, Set<Long> seenFailed)
            throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (true) {
            CheckpointStatsSnapshot stats = stats(cluster, job);
            for (AbstractCheckpointStats checkpoint : stats.getHistory().getCheckpoints()) {
                if (checkpoint.getStatus() == CheckpointStatsStatus.FAILED) {
                    seenFailed.add(checkpoint.getCheckpointId());
                }
            }
            if (stats.getCounts().getNumberOfFailedCheckpoints() >= atLeast) {
                return;
            }
            assertThat(cluster.getJobStatus(job.id()).get()).isEqualTo(JobStatus.RUNNING);
            assertThat(System.nanoTime())
                    .as("%d failed checkpoints within 90 s", atLeast)
                    .isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    private static void awaitCompletedCheckpoints(MiniCluster cluster, RunningJob job, long atLeast)
            throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (stats(cluster, job).getCounts().getNumberOfCompletedCheckpoints() < atLeast) {
            assertThat(cluster.getJobStatus(job.id()).get()).isEqualTo(JobStatus.RUNNING);
            assertThat(System.nanoTime())
                    .as(
                            "%d completed checkpoints within 90 s; last failure: %s",
                            atLeast,
                            stats(cluster, job).getHistory().getLatestFailedCheckpoint() == null
                                    ? "none"
                                    : stats(cluster, job)
                                            .getHistory()
                                            .getLatestFailedCheckpoint()
                                            .getFailureMessage())
                    .isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    /**
     * Reads a completed checkpoint's {@code _metadata} and checks that every file its keyed handles
     * reference exists with the size the handle says; returns how many files.
     */
    private static long assertEveryReferencedFileIsWhole(Path checkpointDir) throws IOException {
        CheckpointMetadata metadata;
        try (InputStream in = Files.newInputStream(checkpointDir.resolve("_metadata"))) {
            metadata =
                    Checkpoints.loadCheckpointMetadata(
                            new DataInputStream(in),
                            DurableStorageFailureITCase.class.getClassLoader(),
                            checkpointDir.toUri().toString());
        }
        Map<Path, Long> files = new TreeMap<>();
        int keyedHandles = 0;
        for (OperatorState operator : metadata.getOperatorStates()) {
            for (OperatorSubtaskState subtask : operator.getStates()) {
                for (KeyedStateHandle handle : subtask.getManagedKeyedState()) {
                    assertThat(handle)
                            .as("keyed handle in %s", checkpointDir)
                            .isInstanceOf(IncrementalRemoteKeyedStateHandle.class);
                    IncrementalRemoteKeyedStateHandle remote =
                            (IncrementalRemoteKeyedStateHandle) handle;
                    keyedHandles++;
                    for (HandleAndLocalPath copy : remote.getSharedState()) {
                        addFile(files, copy.getHandle());
                    }
                    for (HandleAndLocalPath copy : remote.getPrivateState()) {
                        addFile(files, copy.getHandle());
                    }
                    addFile(files, remote.getMetaDataStateHandle());
                }
            }
        }
        assertThat(keyedHandles).as("keyed handles in %s", checkpointDir).isPositive();
        assertThat(files).as("files referenced by %s", checkpointDir).isNotEmpty();
        for (Map.Entry<Path, Long> file : files.entrySet()) {
            assertThat(file.getKey()).as("file referenced by %s", checkpointDir).isRegularFile();
            assertThat(Files.size(file.getKey()))
                    .as("size of %s referenced by %s", file.getKey(), checkpointDir)
                    .isEqualTo(file.getValue());
        }
        return files.size();
    }

    private static void addFile(Map<Path, Long> files, StreamStateHandle handle) {
        if (handle instanceof FileStateHandle file) {
            files.put(Path.of(file.getFilePath().toUri().getPath()), file.getStateSize());
        }
    }

    /** The job's {@code shared/} directory made unwritable, and writable again on close. */
    private static final class Outage implements AutoCloseable {
        enum Kind {
            /**
             * No permission to create a file in it: its permission bits, or, for root, which
             * ignores those, its immutable attribute ({@code chattr +i}).
             */
            PERMISSION_DENIED,
            /** A regular file where the directory was (the directory kept aside meanwhile). */
            NOT_A_DIRECTORY
        }

        private static final Set<PosixFilePermission> READ_ONLY =
                PosixFilePermissions.fromString("r-xr-xr-x");

        private final Path dir;
        private final String how;
        private final String expectedError;
        private final Callable<?> undo;

        private Outage(Path dir, String how, String expectedError, Callable<?> undo) {
            this.dir = dir;
            this.how = how;
            this.expectedError = expectedError;
            this.undo = undo;
        }

        /** Null if this kind of outage cannot be made here. */
        @Nullable
        static Outage of(Path dir, Kind kind) throws Exception {
            switch (kind) {
                case PERMISSION_DENIED:
                    Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(dir);
                    Files.setPosixFilePermissions(dir, READ_ONLY);
                    if (denies(dir)) {
                        return new Outage(
                                dir,
                                "made read-only",
                                "Permission denied",
                                () -> {
                                    Files.setPosixFilePermissions(dir, permissions);
                                    return null;
                                });
                    }
                    Files.setPosixFilePermissions(dir, permissions);
                    if (chattr("+i", dir) && denies(dir)) {
                        return new Outage(
                                dir,
                                "made immutable (chattr +i: this process ignores permission bits)",
                                "Operation not permitted",
                                () -> chattr("-i", dir));
                    }
                    chattr("-i", dir);
                    return null;
                case NOT_A_DIRECTORY:
                    Path aside = dir.resolveSibling(dir.getFileName() + ".aside");
                    Files.move(dir, aside);
                    Files.writeString(dir, "not a directory");
                    return new Outage(
                            dir,
                            "replaced by a regular file",
                            // Java's exception, naming the path that stands in the way.
                            "FileAlreadyExistsException: " + dir,
                            () -> {
                                Files.delete(dir);
                                Files.move(aside, dir);
                                return null;
                            });
                default:
                    throw new IllegalArgumentException(kind.name());
            }
        }

        private static boolean denies(Path dir) throws IOException {
            Path probe = dir.resolve("probe-" + System.nanoTime());
            try {
                Files.createFile(probe);
            } catch (IOException denied) {
                return true;
            }
            Files.delete(probe);
            return false;
        }

        private static boolean chattr(String flag, Path dir) throws Exception {
            Process p;
            try {
                p =
                        new ProcessBuilder("chattr", flag, dir.toString())
                                .redirectErrorStream(true)
                                .start();
            } catch (IOException noChattr) {
                return false;
            }
            p.getInputStream().readAllBytes();
            return p.waitFor() == 0;
        }

        Path dir() {
            return dir;
        }

        String describe() {
            return dir.getFileName() + "/ " + how;
        }

        /** What the storage itself says when a file cannot be created under the directory. */
        String expectedError() {
            return expectedError;
        }

        @Override
        public void close() throws Exception {
            undo.call();
        }
    }
}
