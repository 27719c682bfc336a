package io.taishan.it;

import static io.taishan.it.Scenarios.SCHEDULE;
import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.FinalStates;
import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.JobHarness;
import io.taishan.it.harness.ReferenceRun;
import io.taishan.it.harness.RunningJob;
import io.taishan.it.harness.S3Storage;
import io.taishan.it.harness.TaishanBackendFixture;
import io.taishan.it.job.KeyFinalState;
import io.taishan.it.job.OpenedSubtask;
import java.io.DataInputStream;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.runtime.checkpoint.Checkpoints;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Durable checkpoints into S3, end to end through the backend: the job's checkpoint directory is
 * {@code s3://} on an S3 server in the test JVM (s3proxy), which the MiniCluster reaches through
 * Flink's S3 file system and the kv-server child JVM through the same plugin and Flink keys ({@code
 * durable.plugins-dir}, {@code durable.flink.s3.*}). The node's copies are objects in the job's
 * {@code shared/} prefix; the node then loses its disk, and the job restored from its retained
 * checkpoint downloads its cuts from S3 and ends with an uninterrupted HashMap run's final state.
 */
class DurableS3ITCase {
    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    private static S3Storage s3;

    @BeforeAll
    static void startS3() throws Exception {
        s3 = S3Storage.start();
    }

    @AfterAll
    static void stopS3() throws Exception {
        if (s3 != null) {
            s3.close();
        }
    }

    @Test
    @Timeout(300)
    void aCheckpointInS3OutlivesTheNodeThatHeldItsSnapshots(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir) throws Exception {
        Map<Long, KeyFinalState> expected = ReferenceRun.finalStates(cluster, SCHEDULE);
        try (TaishanBackendFixture backend =
                TaishanBackendFixture.startDurable(
                        workDir.resolve("backend"), s3.kvServerProperties())) {
            JobHarness harness = new JobHarness(cluster, backend, SCHEDULE, workDir);
            Configuration inS3 = new Configuration();
            inS3.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, S3Storage.uri("jobs"));
            RunningJob job =
                    harness.start(2, Scenarios.SLOW, null, inS3, Long.MAX_VALUE)
                            .awaitCompletedCheckpoints(2);
            String checkpoint = job.cancelWithRetainedCheckpointFromStats();
            assertThat(job.finalStatesSoFar()).as("final states of the cancelled run").isEmpty();
            String jobPrefix = "jobs/" + job.id() + "/";
            assertThat(checkpoint).startsWith(S3Storage.uri(jobPrefix + "chk-"));
            assertThat(workDir.resolve("checkpoints")).as("a local checkpoint dir").doesNotExist();

            Map<String, Long> referenced = referencedObjects(checkpoint);
            Map<String, Long> inS3Now = s3.objectsUnder(jobPrefix);
            long sharedBytes = 0;
            for (Map.Entry<String, Long> object : referenced.entrySet()) {
                assertThat(inS3Now)
                        .as(
                                "objects under %s, with %s that %s references",
                                jobPrefix, object, checkpoint)
                        .containsEntry(object.getKey(), object.getValue());
                if (object.getKey().startsWith(jobPrefix + "shared/")) {
                    sharedBytes += object.getValue();
                }
            }
            assertThat(sharedBytes).as("bytes of the node's copies in shared/").isPositive();
            System.out.printf(
                    "[s3] %s references %d objects (%d bytes in shared/); %d objects under %s%n",
                    checkpoint, referenced.size(), sharedBytes, inS3Now.size(), jobPrefix);

            backend.loseServerAndStartAnEmptyOne();

            RunningJob last =
                    harness.start(
                            3, Scenarios.AS_FAST_AS_POSSIBLE, checkpoint, inS3, Long.MAX_VALUE);
            long downloaded = 0;
            for (OpenedSubtask subtask : last.awaitOpenedSubtasks().values()) {
                assertThat(subtask.restoreWrites())
                        .as("ops written by the restore of subtask %s", subtask)
                        .isZero();
                assertThat(subtask.shardsFromSnapshots())
                        .as("shards from snapshots of subtask %s", subtask)
                        .isEqualTo(subtask.keyGroups());
                downloaded += subtask.downloadedBytes();
            }
            assertThat(downloaded)
                    .as("bytes the empty node downloaded from S3")
                    .isPositive()
                    .isLessThanOrEqualTo(
                            sharedBytes + referencedPrivateBytes(referenced, jobPrefix));
            Map<Long, KeyFinalState> actual = last.awaitFinalStates();
            FinalStates.assertSame(
                    actual, expected, "restored onto an empty node from a checkpoint in S3");
        }
    }

    private static long referencedPrivateBytes(Map<String, Long> referenced, String jobPrefix) {
        return referenced.entrySet().stream()
                .filter(e -> !e.getKey().startsWith(jobPrefix + "shared/"))
                .mapToLong(Map.Entry::getValue)
                .sum();
    }

    /**
     * Object key → size of every file the checkpoint's keyed handles reference, read from its
     * {@code _metadata} through Flink's S3 file system.
     */
    private static Map<String, Long> referencedObjects(String checkpoint) throws Exception {
        org.apache.flink.core.fs.Path metadataPath =
                new org.apache.flink.core.fs.Path(checkpoint, "_metadata");
        CheckpointMetadata metadata;
        try (FSDataInputStream in = metadataPath.getFileSystem().open(metadataPath)) {
            metadata =
                    Checkpoints.loadCheckpointMetadata(
                            new DataInputStream(in),
                            DurableS3ITCase.class.getClassLoader(),
                            checkpoint);
        }
        Map<String, Long> objects = new TreeMap<>();
        int keyedHandles = 0;
        for (OperatorState operator : metadata.getOperatorStates()) {
            for (OperatorSubtaskState subtask : operator.getStates()) {
                for (KeyedStateHandle handle : subtask.getManagedKeyedState()) {
                    assertThat(handle).isInstanceOf(IncrementalRemoteKeyedStateHandle.class);
                    IncrementalRemoteKeyedStateHandle remote =
                            (IncrementalRemoteKeyedStateHandle) handle;
                    keyedHandles++;
                    for (HandleAndLocalPath copy : remote.getSharedState()) {
                        assertThat(copy.getHandle()).isInstanceOf(FileStateHandle.class);
                        addObject(objects, copy.getHandle());
                    }
                    for (HandleAndLocalPath copy : remote.getPrivateState()) {
                        addObject(objects, copy.getHandle());
                    }
                    addObject(objects, remote.getMetaDataStateHandle());
                }
            }
        }
        assertThat(keyedHandles).as("keyed handles of %s", checkpoint).isPositive();
        return objects;
    }

    private static void addObject(Map<String, Long> objects, StreamStateHandle handle) {
        if (handle instanceof FileStateHandle file) {
            java.net.URI uri = file.getFilePath().toUri();
            assertThat(uri.getScheme()).as("scheme of %s", uri).isEqualTo("s3");
            assertThat(uri.getAuthority()).as("bucket of %s", uri).isEqualTo(S3Storage.BUCKET);
            objects.put(uri.getPath().substring(1), file.getStateSize());
        }
    }
}
