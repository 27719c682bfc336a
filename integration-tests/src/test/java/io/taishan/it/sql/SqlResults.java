package io.taishan.it.sql;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

/**
 * Where the scenario's queries write: per run and query, the changelog applied (updating queries:
 * the final row per key) or the rows in arrival order (append-only queries), shared through the
 * test's class loader as the MiniCluster runs the tasks in this JVM.
 */
final class SqlResults {
    private static final Map<String, Map<String, String>> BY_KEY = new ConcurrentHashMap<>();
    private static final Map<String, List<String>> APPENDED = new ConcurrentHashMap<>();
    private static final AtomicInteger LAST_ROUND = new AtomicInteger(-1);
    private static volatile boolean released;

    private SqlResults() {}

    static void roundEmitted(int round) {
        LAST_ROUND.set(round);
    }

    /** The last round the source emitted (-1 before the first). */
    static int lastRound() {
        return LAST_ROUND.get();
    }

    static void reset() {
        LAST_ROUND.set(-1);
        released = false;
    }

    /** Lets the source start its schedule: every task is running, so every timestamp is fair. */
    static void release() {
        released = true;
    }

    static boolean released() {
        return released;
    }

    /** The final row per key (the first column) of an updating query. */
    static Map<String, String> byKey(String run, String query) {
        return new TreeMap<>(BY_KEY.getOrDefault(run + "/" + query, Map.of()));
    }

    /** The rows of an append-only query, sorted (parallel subtasks interleave). */
    static List<String> appended(String run, String query) {
        List<String> rows = new ArrayList<>(APPENDED.getOrDefault(run + "/" + query, List.of()));
        rows.sort(null);
        return rows;
    }

    /** Applies a changelog to the final rows by key. */
    @SuppressWarnings("deprecation")
    static final class ByKeySink implements SinkFunction<Row> {
        private static final long serialVersionUID = 1L;
        private final String id;

        ByKeySink(String run, String query) {
            this.id = run + "/" + query;
        }

        @Override
        public void invoke(Row row, Context context) {
            Map<String, String> rows = BY_KEY.computeIfAbsent(id, k -> new ConcurrentHashMap<>());
            String key = String.valueOf(row.getField(0));
            RowKind kind = row.getKind();
            if (kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER) {
                Row copy = Row.copy(row);
                copy.setKind(RowKind.INSERT);
                rows.put(key, copy.toString());
            } else {
                rows.remove(key);
            }
        }
    }

    /** Collects insert-only rows. */
    @SuppressWarnings("deprecation")
    static final class AppendSink implements SinkFunction<Row> {
        private static final long serialVersionUID = 1L;
        private final String id;

        AppendSink(String run, String query) {
            this.id = run + "/" + query;
        }

        @Override
        public void invoke(Row row, Context context) {
            APPENDED.computeIfAbsent(
                            id, k -> java.util.Collections.synchronizedList(new ArrayList<>()))
                    .add(row.getKind().shortString() + row);
        }
    }
}
