package io.taishan.benchmarks.job;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Issue 8's cleanup-timer benchmark: a {@code KeyedProcessFunction} doing, on every record, what
 * Flink SQL's {@code CleanupState.registerProcessingCleanupTimer} does with the minimum retention
 * equal to the maximum (the costliest setting: every record of a key seen in an earlier millisecond
 * moves its timer): read the key's cleanup time from a {@code ValueState<Long>}; if it is absent or
 * earlier than now + retention, register a processing-time timer at now + retention, delete the old
 * one, and store the new time.
 *
 * <p>Input: a load phase (every key once, scattered order; heap measured after a full GC at each
 * quarter and at the end, in a pause of the source), then a timed phase of uniform or Zipf keys.
 * The retention (1 h) is longer than the run, so no timer fires: what is measured is the pattern
 * itself. One subtask; the marks ({@link Progress}) are taken on its thread.
 */
public final class CleanupTimerJob {
    static final long RETENTION_MILLIS = TimeUnit.HOURS.toMillis(1);
    private static final long PAUSE_MILLIS = 3_000;

    private CleanupTimerJob() {}

    /** The pattern, exactly; the state name is the operator's only state besides its timers. */
    static final class CleanupFunction extends KeyedProcessFunction<Long, Long, Void> {
        private static final long serialVersionUID = 1L;
        private final long retentionMillis;
        private transient ValueState<Long> cleanupTime;

        CleanupFunction(long retentionMillis) {
            this.retentionMillis = retentionMillis;
        }

        @Override
        public void open(OpenContext openContext) {
            cleanupTime =
                    getRuntimeContext()
                            .getState(new ValueStateDescriptor<>("cleanup-time", Types.LONG));
        }

        @Override
        public void processElement(Long key, Context ctx, Collector<Void> out) throws Exception {
            long now = ctx.timerService().currentProcessingTime();
            Long current = cleanupTime.value();
            long next = now + retentionMillis;
            if (current == null || current < next) {
                ctx.timerService().registerProcessingTimeTimer(next);
                if (current != null) {
                    ctx.timerService().deleteProcessingTimeTimer(current);
                }
                cleanupTime.update(next);
            }
            Progress.recordProcessed();
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<Void> out) {
            cleanupTime.clear();
        }
    }

    static JsonObject run(
            JobBackend backend,
            Configuration jobConfig,
            int keys,
            long records,
            Phase.Access access)
            throws Exception {
        List<Phase> phases =
                List.of(
                        new Phase("load", keys, keys, Phase.Access.PERMUTATION, 0, PAUSE_MILLIS),
                        new Phase("steady", records, keys, access, 0, 0));
        // Marks: the load's quarters and end, the first and last steady record.
        long[] marks = {keys / 4, keys / 2, 3L * keys / 4, keys, keys + 1L, keys + records};
        Progress.expect(marks);

        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(1, jobConfig);
        env.getConfig().enableObjectReuse();
        env.addSource(new PhasedKeySource(phases))
                .name("keys")
                .keyBy(k -> k, Types.LONG)
                .process(new CleanupFunction(RETENTION_MILLIS))
                .name("cleanup-state");
        JsonObject result = new JsonObject();
        result.addProperty("loadAverageStart", Machine.loadAverage());
        JobClient job = env.executeAsync("cleanup timers " + backend.description());
        JsonArray heap = new JsonArray();
        for (int i = 0; i < 4; i++) {
            Progress.Mark mark = await(i, job);
            // Quarter marks are taken with the job running; the last falls into the source's pause.
            long used = Machine.heapAfterGc();
            JsonObject point = new JsonObject();
            point.addProperty("keys", Math.min(keys, Progress.processed()));
            point.addProperty("heapBytes", used);
            point.addProperty("residentBytes", Machine.residentBytes());
            point.addProperty("markedAtRecords", mark.records());
            heap.add(point);
        }
        Progress.Mark steadyStart = await(4, job);
        long cpuStart = Machine.processCpuNanos();
        Progress.Mark steadyEnd = await(5, job);
        long cpuEnd = Machine.processCpuNanos();
        job.getJobExecutionResult().get(10, TimeUnit.MINUTES);
        result.addProperty("loadAverageEnd", Machine.loadAverage());

        Progress.Mark loadStart = Progress.mark(0);
        Progress.Mark loadEnd = Progress.mark(3);
        result.addProperty("keys", keys);
        result.addProperty("steadyRecords", records);
        result.addProperty("access", access.name());
        result.addProperty("retentionMillis", RETENTION_MILLIS);
        result.add("heap", heap);
        long steadyCount = steadyEnd.records() - steadyStart.records();
        double seconds = (steadyEnd.nanos() - steadyStart.nanos()) / 1e9;
        result.addProperty("steadySeconds", seconds);
        result.addProperty("steadyRecordsPerSecond", steadyCount / seconds);
        // Polled, so approximate: the MiniCluster's JVM only (not a kv-server child).
        result.addProperty("jobJvmCpuSecondsInSteady", (cpuEnd - cpuStart) / 1e9);
        result.addProperty(
                "loadRecordsPerSecondWithGcs",
                (loadEnd.records() - loadStart.records())
                        / ((loadEnd.nanos() - loadStart.nanos()) / 1e9));
        result.add("steadyMetricsPerRecord", perRecord(steadyStart, steadyEnd));
        result.add("loadMetricsPerRecord", perRecord(loadStart, loadEnd));
        result.add("metricsAtEnd", toJson(steadyEnd.metrics()));
        return result;
    }

    static JsonObject perRecord(Progress.Mark from, Progress.Mark to) {
        JsonObject json = new JsonObject();
        long n = to.records() - from.records();
        to.metrics()
                .forEach(
                        (name, value) -> {
                            double before = from.metrics().getOrDefault(name, 0.0);
                            if (isCumulative(name) && value - before != 0) {
                                json.addProperty(name, (value - before) / n);
                            }
                        });
        return json;
    }

    /** Counters and the read chain's counting gauges: deltas mean something; sizes do not. */
    private static boolean isCumulative(String name) {
        return name.endsWith(".count")
                || name.endsWith(".errors")
                || name.matches(
                        "taishan\\.read\\.(cacheHits|cacheMisses|filterAbsent|filterFalsePositives"
                                + "|remoteGets|remoteScans|filterFetches|cacheEvictions)")
                || name.matches("taishan\\.(writeBatches|writeOps)");
    }

    static JsonObject toJson(java.util.Map<String, Double> metrics) {
        JsonObject json = new JsonObject();
        metrics.forEach(json::addProperty);
        return json;
    }

    static Progress.Mark await(int mark, JobClient job) throws Exception {
        while (true) {
            Progress.Mark m = Progress.mark(mark);
            if (m != null) {
                return m;
            }
            // The local environment shuts its MiniCluster down with the job: ask the result.
            if (job.getJobExecutionResult().isDone()) {
                job.getJobExecutionResult().get();
                throw new IllegalStateException("the job ended before mark " + mark);
            }
            Thread.sleep(5);
        }
    }
}
