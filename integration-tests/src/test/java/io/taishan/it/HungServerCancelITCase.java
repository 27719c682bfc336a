package io.taishan.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.it.harness.ItCluster;
import io.taishan.it.harness.TaishanBackendFixture;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A kv-server that hangs (stopped with SIGSTOP: connections stay open, nothing answers) must not
 * hold a job's cancellation until a deadline runs out (issue 6 §5): the task thread blocked in a
 * remote read is interrupted by Flink and must give up at once, and the backend's close must not
 * wait on the server either.
 */
class HungServerCancelITCase {
    @RegisterExtension static final MiniClusterExtension MINI_CLUSTER = ItCluster.extension();

    /** Well under the request deadline (10 s) and the client's drain on close (30 s). */
    private static final Duration CANCEL_BOUND = Duration.ofSeconds(5);

    static final AtomicLong PROCESSED = new AtomicLong();
    static final AtomicLong NEW_KEYS = new AtomicLong();

    /**
     * @param writeEveryRecord true: tasks end up waiting on the full write queue; false: each key
     *     is written once, then only read, so tasks end up blocked in a remote read
     */
    @ParameterizedTest(name = "writeEveryRecord={0}")
    @ValueSource(booleans = {true, false})
    @Timeout(180)
    void cancellingAJobBlockedOnAHungServerDoesNotWaitForADeadline(
            boolean writeEveryRecord, @InjectMiniCluster MiniCluster cluster, @TempDir Path workDir)
            throws Exception {
        PROCESSED.set(0);
        NEW_KEYS.set(0);
        try (TaishanBackendFixture backend = TaishanBackendFixture.start(workDir)) {
            Configuration config = backend.configuration();
            config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
            // Every record a remote read: no cache, and keys that repeat (present in the filter).
            config.setString("taishan.cache.type", "none");
            TestStreamEnvironment env =
                    new TestStreamEnvironment(cluster, config, 2, List.of(), List.of());
            env.fromSequence(0, Long.MAX_VALUE)
                    .keyBy(n -> n % 1_000, Types.LONG)
                    .map(new ReadAndCount(writeEveryRecord))
                    .sinkTo(new DiscardingSink<>());
            JobClient job = env.executeAsync("reads on a kv-server that will hang");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (PROCESSED.get() < 20_000 || NEW_KEYS.get() < 1_000) {
                assertThat(System.nanoTime())
                        .as("every key and 20,000 records within 120 s")
                        .isLessThan(deadline);
                Thread.sleep(50);
            }
            assertThat(NEW_KEYS.get()).as("keys read as absent").isEqualTo(1_000);
            if (!writeEveryRecord) {
                // Nothing in flight when the server hangs: every write acknowledged, so reads go
                // to the server (unacknowledged writes would answer them).
                while (ItCluster.findMetrics(job.getJobID(), ".*writeQueueOps").values().stream()
                        .anyMatch(m -> ((Number) ((Gauge<?>) m).getValue()).longValue() != 0)) {
                    assertThat(System.nanoTime()).as("writes acknowledged").isLessThan(deadline);
                    Thread.sleep(50);
                }
                assertThat(ItCluster.findMetrics(job.getJobID(), ".*writeQueueOps")).hasSize(2);
            }

            long pid = backend.serverPid();
            signal("STOP", pid);
            try {
                // Reads of keys with unacknowledged writes are answered by the write queue, so
                // the job goes on until the queue is full; then every task waits on the server.
                long stalledBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                long before;
                do {
                    assertThat(System.nanoTime()).as("stalled within 60 s").isLessThan(stalledBy);
                    before = PROCESSED.get();
                    Thread.sleep(1_000);
                } while (PROCESSED.get() != before);

                long start = System.nanoTime();
                try {
                    job.cancel().get(60, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    Throwable why = e;
                    try {
                        job.getJobExecutionResult().get();
                    } catch (ExecutionException failure) {
                        why = failure;
                    }
                    throw new AssertionError("the job did not cancel", why);
                }
                while (!job.getJobStatus().get().isGloballyTerminalState()) {
                    Thread.sleep(20);
                }
                Duration took = Duration.ofNanos(System.nanoTime() - start);
                System.out.printf("cancelled in %d ms with the kv-server hung%n", took.toMillis());
                assertThat(job.getJobStatus().get()).isEqualTo(JobStatus.CANCELED);
                assertThat(took).as("time to cancel").isLessThan(CANCEL_BOUND);
            } finally {
                signal("CONT", pid);
            }
        }
    }

    private static void signal(String signal, long pid) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).start();
        assertThat(kill.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(kill.exitValue()).as("kill -%s %d", signal, pid).isZero();
    }

    /** Reads and writes its key's count: every record is a remote read when the cache is off. */
    static final class ReadAndCount extends RichMapFunction<Long, Long> {
        private final boolean writeEveryRecord;
        private transient ValueState<Long> count;

        ReadAndCount(boolean writeEveryRecord) {
            this.writeEveryRecord = writeEveryRecord;
        }

        @Override
        public void open(OpenContext context) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public Long map(Long value) throws Exception {
            Long n = count.value();
            if (n == null) {
                NEW_KEYS.incrementAndGet();
            }
            if (n == null || writeEveryRecord) {
                count.update(n == null ? 1 : n + 1);
            }
            PROCESSED.incrementAndGet();
            return value;
        }
    }
}
