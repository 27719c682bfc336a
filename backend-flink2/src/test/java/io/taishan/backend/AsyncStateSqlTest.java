package io.taishan.backend;

import static org.assertj.core.api.Assertions.assertThat;

import io.taishan.kv.server.EmbeddedKvServer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.runtime.asyncprocessing.operators.AbstractAsyncStateUdfStreamOperator;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.AbstractUdfStreamOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Flink SQL with asynchronous state ({@code table.exec.async-state.enabled}) on Taishan gives the
 * result the same query gives with synchronous state, for every kind of operator that Flink 2.3
 * runs asynchronously: a regular (outer) join, a group aggregate, append-only top-N and top-1, a
 * row-time deduplication, a window aggregate and a window join. Each query runs twice on the same
 * kv-server, at parallelism 2 with checkpoints every 100 ms; the async plan must hold the query's
 * async operator (else the comparison would be of one path with itself) and the sync plan none.
 *
 * <p>The input is deterministic and never late: a {@code datagen} sequence whose event time grows
 * with the id, split into ranges per subtask. The comparison is of the materialized result (the
 * changelog summed up per row), which does not depend on how the subtasks interleave.
 */
class AsyncStateSqlTest {
    /**
     * The last event (ts 99.99 s) is in the same 5 s window as the events before the last regular
     * watermark, so at the final watermark each key has records of one window only in the window
     * aggregate's buffer. With records of two windows of one key there, Flink 2.3's async window
     * aggregate loses the later window on any asynchronous backend (ForSt as well): its buffer
     * flush defers the second window's combine behind the first's requests, and the combine then
     * finds the window already fired by the watermark and registers no timer.
     */
    private static final int ROWS = 9_999;

    private static final String EVENTS =
            "CREATE TEMPORARY TABLE events ("
                    + " id BIGINT,"
                    + " k AS id % 50,"
                    + " v AS (id * 7919) % 100003,"
                    + " ts AS TO_TIMESTAMP_LTZ(id * 10, 3),"
                    + " WATERMARK FOR ts AS ts - INTERVAL '1' SECOND"
                    + ") WITH ("
                    + " 'connector' = 'datagen',"
                    + " 'rows-per-second' = '1000000',"
                    + " 'fields.id.kind' = 'sequence',"
                    + " 'fields.id.start' = '1',"
                    + " 'fields.id.end' = '"
                    + ROWS
                    + "')";

    private static EmbeddedKvServer server;

    @TempDir static Path dirs;

    @BeforeAll
    static void start() throws Exception {
        server = EmbeddedKvServer.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (server != null) {
            server.close();
        }
    }

    static Stream<Arguments> queries() {
        return Stream.of(
                Arguments.of(
                        "regular left join",
                        "AsyncStateStreamingJoinOperator",
                        "SELECT l.id, r.id FROM (SELECT id, k FROM events WHERE id % 2 = 0) l"
                                + " LEFT JOIN (SELECT id, k FROM events WHERE id % 26 = 13) r"
                                + " ON l.k = r.k"),
                Arguments.of(
                        "group aggregate",
                        "AsyncStateGroupAggFunction",
                        "SELECT k, COUNT(*), SUM(v), MAX(v), MIN(v) FROM events GROUP BY k"),
                Arguments.of(
                        "append-only top-3",
                        "AsyncStateAppendOnlyTopNFunction",
                        "SELECT k, id, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k"
                                + " ORDER BY v DESC) AS rn FROM events) WHERE rn <= 3"),
                Arguments.of(
                        "top-1",
                        "AsyncStateFastTop1Function",
                        "SELECT k, id, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k"
                                + " ORDER BY v ASC) AS rn FROM events) WHERE rn = 1"),
                Arguments.of(
                        "row-time deduplication",
                        "AsyncStateRowTimeDeduplicateFunction",
                        "SELECT k, id, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k"
                                + " ORDER BY ts DESC) AS rn FROM events) WHERE rn = 1"),
                Arguments.of(
                        "tumbling window aggregate",
                        "AsyncStateWindowAggOperator",
                        "SELECT k, window_start, window_end, COUNT(*), SUM(v), MAX(v) FROM"
                                + " TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '5'"
                                + " SECOND)) GROUP BY k, window_start, window_end"),
                Arguments.of(
                        "window join",
                        "AsyncStateWindowJoinOperator",
                        "SELECT l.id, r.id, l.window_start FROM"
                                + " (SELECT * FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts),"
                                + " INTERVAL '2' SECOND)) WHERE id % 2 = 0) l JOIN"
                                + " (SELECT * FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts),"
                                + " INTERVAL '2' SECOND)) WHERE id % 5 = 1) r"
                                + " ON l.k = r.k AND l.window_start = r.window_start"
                                + " AND l.window_end = r.window_end"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("queries")
    void asyncStateGivesTheSynchronousResult(String kind, String asyncOperator, String query)
            throws Exception {
        Run sync = run(query, false);
        Run async = run(query, true);

        assertThat(sync.operators()).noneMatch(o -> o.contains("AsyncState"));
        assertThat(async.operators()).anyMatch(o -> o.contains(asyncOperator));
        assertThat(sync.result()).isNotEmpty();
        Map<Row, Long> missing = new HashMap<>(sync.result());
        async.result().forEach((row, count) -> missing.merge(row, -count, Long::sum));
        missing.values().removeIf(count -> count == 0);
        assertThat(missing).as("sync result minus async result").isEmpty();
    }

    /** The operators of the job's plan, and its result: each row with its net count. */
    private record Run(List<String> operators, Map<Row, Long> result) {}

    private static Run run(String query, boolean asyncState) throws Exception {
        Configuration config = new Configuration();
        config.set(StateBackendOptions.STATE_BACKEND, TaishanStateBackendFactory.class.getName());
        config.set(TaishanOptions.KV_ADDRESS, server.address());
        config.set(PipelineOptions.MAX_PARALLELISM, 16);
        config.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        config.set(
                CheckpointingOptions.CHECKPOINTS_DIRECTORY,
                dirs.resolve("checkpoints").toUri().toString());
        config.setString("table.exec.async-state.enabled", Boolean.toString(asyncState));
        // As Flink's documentation of async state asks: neither mini-batch nor two-phase
        // aggregation has an async version.
        config.setString("table.exec.mini-batch.enabled", "false");
        config.setString("table.optimizer.agg-phase-strategy", "ONE_PHASE");
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(2, config);
        env.enableCheckpointing(100);
        StreamTableEnvironment tables = StreamTableEnvironment.create(env);
        tables.executeSql(EVENTS);
        DataStream<Row> changes = tables.toChangelogStream(tables.sqlQuery(query));

        List<String> operators = new ArrayList<>();
        for (Transformation<?> t : changes.getTransformation().getTransitivePredecessors()) {
            if (t instanceof OneInputTransformation<?, ?> one) {
                operators.add(describe(one.getOperatorFactory()));
            } else if (t instanceof TwoInputTransformation<?, ?, ?> two) {
                operators.add(describe(two.getOperatorFactory()));
            }
        }
        Map<Row, Long> result = new HashMap<>();
        try (CloseableIterator<Row> rows = changes.executeAndCollect()) {
            while (rows.hasNext()) {
                Row row = rows.next();
                RowKind kind = row.getKind();
                long sign = kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER ? 1 : -1;
                row.setKind(RowKind.INSERT);
                result.merge(row, sign, Long::sum);
            }
        }
        result.values().removeIf(count -> count == 0);
        return new Run(operators, result);
    }

    /** The operator's class, and for a function's operator the function's class too. */
    private static String describe(StreamOperatorFactory<?> factory) {
        if (factory instanceof SimpleOperatorFactory<?> simple) {
            String operator = simple.getOperator().getClass().getSimpleName();
            Object function =
                    simple.getOperator() instanceof AbstractUdfStreamOperator<?, ?> udf
                            ? udf.getUserFunction()
                            : simple.getOperator()
                                            instanceof AbstractAsyncStateUdfStreamOperator<?, ?> udf
                                    ? udf.getUserFunction()
                                    : null;
            return function == null
                    ? operator
                    : operator + "(" + function.getClass().getSimpleName() + ")";
        }
        return factory == null ? "-" : factory.getClass().getSimpleName();
    }
}
