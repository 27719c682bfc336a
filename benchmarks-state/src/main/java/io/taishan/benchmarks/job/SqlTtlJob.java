package io.taishan.benchmarks.job;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

/**
 * Issue 8's SQL benchmark: {@code SELECT k, COUNT(*), SUM(v) FROM events GROUP BY k} with {@code
 * table.exec.state.ttl}, over an input where every one of {@code keys} keys arrives (a scattered
 * pass, unpaced: the job's throughput), and then only the first {@code activeKeys} keep arriving,
 * paced, for long enough that the others' state expires and is swept. The sink counts the
 * aggregate's {@code +I}/{@code +U} rows, one per input record, on the one subtask's thread.
 *
 * <p>While it runs, every second, this JVM records the records processed and the RocksDB backend's
 * {@code rocksdb.estimate-num-keys} if that backend runs; a Taishan backend's kv-server samples its
 * own live entries ({@link JobBackend#storeSamples}).
 */
public final class SqlTtlJob {
    static final String QUERY = "SELECT k, COUNT(*) AS c, SUM(v) AS s FROM events GROUP BY k";

    private SqlTtlJob() {}

    /** Counts the aggregate's updates: one {@code +I} or {@code +U} per input record. */
    @SuppressWarnings("deprecation")
    static final class CountingSink implements SinkFunction<Row> {
        private static final long serialVersionUID = 1L;

        @Override
        public void invoke(Row row, Context context) {
            RowKind kind = row.getKind();
            if (kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER) {
                Progress.recordProcessed();
            }
        }
    }

    @SuppressWarnings("deprecation")
    static JsonObject run(
            JobBackend backend,
            Configuration jobConfig,
            int keys,
            int activeKeys,
            Duration ttl,
            double quietRecordsPerSecond,
            Duration quietFor)
            throws Exception {
        long quietRecords = (long) (quietRecordsPerSecond * quietFor.toMillis() / 1000.0);
        List<Phase> phases =
                List.of(
                        new Phase("all keys", keys, keys, Phase.Access.PERMUTATION, 0, 0),
                        new Phase(
                                "active keys only",
                                quietRecords,
                                activeKeys,
                                Phase.Access.UNIFORM,
                                quietRecordsPerSecond,
                                0));
        Progress.expect(1, keys, keys + quietRecords);

        Configuration config = new Configuration(jobConfig);
        config.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.STREAMING);
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(1, config);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set("table.exec.state.ttl", ttl.toMillis() + " ms");
        DataStream<Row> events =
                env.addSource(new PhasedKeySource(phases))
                        .name("keys")
                        .map(k -> Row.of(k, k % 100))
                        .returns(Types.ROW_NAMED(new String[] {"k", "v"}, Types.LONG, Types.LONG));
        tEnv.createTemporaryView("events", events);
        tEnv.toChangelogStream(tEnv.sqlQuery(QUERY)).addSink(new CountingSink()).name("count");

        JsonObject result = new JsonObject();
        result.addProperty("loadAverageStart", Machine.loadAverage());
        long start = System.currentTimeMillis();
        JobClient job = env.executeAsync("sql group by ttl " + backend.description());
        JsonArray samples = new JsonArray();
        long nextSample = start;
        // The local environment shuts its MiniCluster down with the job: poll the result only.
        java.util.concurrent.CompletableFuture<?> done = job.getJobExecutionResult();
        while (!done.isDone()) {
            long now = System.currentTimeMillis();
            if (now >= nextSample) {
                JsonObject s = new JsonObject();
                s.addProperty("epochMillis", now);
                s.addProperty("processed", Progress.processed());
                s.addProperty("loadAverage1m", Machine.loadAverage().split(" ")[0]);
                Double estimate = MetricsCapture.snapshot().get("rocksdb.estimate-num-keys");
                if (estimate != null) {
                    s.addProperty("rocksdbEstimateNumKeys", estimate);
                }
                samples.add(s);
                nextSample += 1000;
            }
            Thread.sleep(Math.max(1, Math.min(50, nextSample - System.currentTimeMillis())));
        }
        done.get(1, TimeUnit.MINUTES);
        result.addProperty("loadAverageEnd", Machine.loadAverage());

        Progress.Mark first = Progress.mark(0);
        Progress.Mark allKeys = Progress.mark(1);
        Progress.Mark end = Progress.mark(2);
        result.addProperty("query", QUERY);
        result.addProperty("keys", keys);
        result.addProperty("activeKeys", activeKeys);
        result.addProperty("ttlMillis", ttl.toMillis());
        result.addProperty("quietRecordsPerSecond", quietRecordsPerSecond);
        result.addProperty("quietRecords", quietRecords);
        result.addProperty("jobStartMillis", start);
        result.addProperty("firstRecordMillis", first.epochMillis());
        result.addProperty("allKeysSeenMillis", allKeys.epochMillis());
        result.addProperty("lastRecordMillis", end.epochMillis());
        double seconds = (allKeys.nanos() - first.nanos()) / 1e9;
        result.addProperty("activeSeconds", seconds);
        result.addProperty(
                "activeRecordsPerSecond", (allKeys.records() - first.records()) / seconds);
        result.add("activeMetricsPerRecord", CleanupTimerJob.perRecord(first, allKeys));
        result.add("metricsAtEnd", CleanupTimerJob.toJson(end.metrics()));
        result.add("jobSamples", samples);
        return result;
    }
}
