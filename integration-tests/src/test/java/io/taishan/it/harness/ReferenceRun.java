package io.taishan.it.harness;

import io.taishan.it.job.EventSchedule;
import io.taishan.it.job.ExpectedKeyState;
import io.taishan.it.job.KeyFinalState;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.util.FileUtils;

/**
 * The final state of one uninterrupted run on {@code HashMapStateBackend}, what every scenario is
 * compared with; computed once per JVM. It is itself checked against {@link ExpectedKeyState}, so a
 * wrong reference fails here rather than as a mysterious mismatch in a scenario.
 */
public final class ReferenceRun {
    private static final Map<EventSchedule, Map<Long, KeyFinalState>> CACHE = new HashMap<>();

    private ReferenceRun() {}

    public static synchronized Map<Long, KeyFinalState> finalStates(
            MiniCluster cluster, EventSchedule schedule) throws Exception {
        Map<Long, KeyFinalState> cached = CACHE.get(schedule);
        if (cached != null) {
            return cached;
        }
        Path workDir = Files.createTempDirectory("taishan-it-reference");
        try (BackendFixture hashMap = Backends.hashMap().start(workDir)) {
            RunningJob job = new JobHarness(cluster, hashMap, schedule, workDir).start(2, 0, null);
            Map<Long, KeyFinalState> states = job.awaitFinalStates();
            Map<Long, KeyFinalState> model = new HashMap<>();
            for (long key = 0; key < schedule.keyCount(); key++) {
                model.put(key, ExpectedKeyState.of(schedule, key));
            }
            FinalStates.assertSame(states, model, "uninterrupted HashMap run vs. the model");
            CACHE.put(schedule, states);
            return states;
        } finally {
            FileUtils.deleteDirectoryQuietly(workDir.toFile());
        }
    }
}
