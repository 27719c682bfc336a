package io.taishan.benchmarks.nexmark;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The Nexmark queries this benchmark runs, each with its SQL file as nexmark/nexmark ships it
 * ({@code src/main/resources/nexmark/}), and whether its result can be compared across runs.
 *
 * <p>The source makes every run's events the same and emits each subtask's events in timestamp
 * order, so no event is ever late for Nexmark's watermark (timestamp minus 4 s); every window, join
 * and aggregate then ends in the same result whichever way the subtasks interleave. What still
 * depends on arrival order is a {@code ROW_NUMBER} over rows that tie on its {@code ORDER BY}: the
 * row that arrived first wins. Such a query's row count is still compared (one row per partition,
 * or {@code min(N, rows)}), its digest is not.
 */
public enum NexmarkQuery {
    Q3("q3", "local item suggestion: person ⋈ auction (regular join)", Ties.NEVER),
    Q4("q4", "average price per category: auction ⋈ bid, MAX per auction, AVG", Ties.NEVER),
    Q5("q5", "hot items: HOP 10 s / 2 s counts per auction ⋈ their maximum", Ties.NEVER),
    Q7("q7", "highest bid: TUMBLE 10 s MAX(price) ⋈ bid", Ties.NEVER),
    Q8("q8", "monitor new users: TUMBLE 10 s person ⋈ auction per window", Ties.NEVER),
    Q9(
            "q9",
            "winning bids: auction ⋈ bid, ROW_NUMBER by price DESC, dateTime ASC, top 1",
            Ties.SAME_TIMESTAMP),
    Q11("q11", "user sessions: SESSION 10 s count per bidder", Ties.NEVER),
    Q15("q15", "bidding statistics per day: COUNT DISTINCT with FILTER", Ties.NEVER),
    Q16("q16", "channel statistics per day: COUNT DISTINCT with FILTER", Ties.NEVER),
    Q17("q17", "auction statistics per day: count, min, max, avg, sum", Ties.NEVER),
    Q18(
            "q18",
            "last bid per bidder and auction: ROW_NUMBER by dateTime DESC, top 1",
            Ties.SAME_TIMESTAMP),
    Q19("q19", "top 10 bids per auction: ROW_NUMBER by price DESC", Ties.ALWAYS),
    Q20("q20", "bid ⋈ auction of category 10 (regular join)", Ties.NEVER);

    /**
     * When rows can tie on a query's {@code ORDER BY}. Event time advances by {@code 1000 / rate}
     * ms per event, so at most 1,000 events/s of event time no two events share a timestamp.
     */
    public enum Ties {
        NEVER,
        SAME_TIMESTAMP,
        ALWAYS
    }

    /** Above this rate (events per second of event time) two events can share a timestamp. */
    public static final double UNIQUE_TIMESTAMPS_UP_TO = 1000;

    private final String id;
    private final String title;
    private final Ties ties;

    NexmarkQuery(String id, String title, Ties ties) {
        this.id = id;
        this.title = title;
        this.ties = ties;
    }

    public String id() {
        return id;
    }

    public String title() {
        return title;
    }

    public static NexmarkQuery of(String id) {
        for (NexmarkQuery q : values()) {
            if (q.id.equalsIgnoreCase(id)) {
                return q;
            }
        }
        throw new IllegalArgumentException("no Nexmark query " + id + " here");
    }

    /**
     * Why this query's result depends on arrival order at this rate, or null if it does not (then
     * its digest must be the same on every backend).
     */
    public String orderDependence(double eventsPerSecond) {
        return switch (ties) {
            case NEVER -> null;
            case SAME_TIMESTAMP ->
                    eventsPerSecond > UNIQUE_TIMESTAMPS_UP_TO
                            ? "ROW_NUMBER over dateTime: at more than 1,000 events/s of event time"
                                    + " bids share timestamps, and the first to arrive wins a tie"
                            : null;
            case ALWAYS ->
                    "ROW_NUMBER by price: bids of one auction tie on price, and which of them"
                            + " ranks (and its rank_number) depends on arrival order";
        };
    }

    /**
     * The statements of this query's run: Nexmark's {@code datagen} table with the given options,
     * its {@code person}, {@code auction} and {@code bid} views, the query's sink table (its {@code
     * blackhole} connector replaced by {@code nexmark-capture}) and its {@code INSERT}, last.
     */
    public List<String> statements(Map<String, String> datagenOptions, String dumpDir) {
        List<String> out = new ArrayList<>();
        Map<String, String> vars = new TreeMap<>();
        vars.put("${TPS}", datagenOptions.get("first-event.rate"));
        vars.put("${EVENTS_NUM}", datagenOptions.get("events.num"));
        vars.put("${PERSON_PROPORTION}", "1");
        vars.put("${AUCTION_PROPORTION}", "3");
        vars.put("${BID_PROPORTION}", "46");
        vars.put("${NEXMARK_TABLE}", "datagen");
        // Nexmark's DDL sets the rate and the count; the other options are added to its WITH.
        StringBuilder extra = new StringBuilder();
        for (Map.Entry<String, String> e : datagenOptions.entrySet()) {
            if (!e.getKey().equals("first-event.rate") && !e.getKey().equals("events.num")) {
                extra.append(",\n    '")
                        .append(e.getKey())
                        .append("' = '")
                        .append(e.getValue())
                        .append("'");
            }
        }
        for (String s : statementsOf("ddl_gen.sql")) {
            out.add(
                    replaceOnce(
                            substitute(s, vars),
                            "'connector' = 'nexmark'",
                            "'connector' = 'nexmark'" + extra));
        }
        for (String s : statementsOf("ddl_views.sql")) {
            out.add(substitute(s, vars));
        }
        String capture =
                "'connector' = 'nexmark-capture'"
                        + (dumpDir == null ? "" : ",\n  'dump-dir' = '" + dumpDir + "'");
        List<String> query = statementsOf(id + ".sql");
        for (String s : query) {
            out.add(
                    s.startsWith("CREATE TABLE")
                            ? replaceOnce(s, "'connector' = 'blackhole'", capture)
                            : s);
        }
        if (!out.get(out.size() - 1).startsWith("INSERT INTO")) {
            throw new IllegalStateException(id + ".sql does not end with its INSERT");
        }
        return out;
    }

    private static String substitute(String sql, Map<String, String> vars) {
        for (Map.Entry<String, String> v : vars.entrySet()) {
            sql = sql.replace(v.getKey(), v.getValue());
        }
        return sql;
    }

    private static String replaceOnce(String sql, String what, String with) {
        if (!sql.contains(what)) {
            throw new IllegalStateException("expected " + what + " in\n" + sql);
        }
        return sql.replace(what, with);
    }

    /** A file's statements: comment lines dropped, split at the semicolons that end lines. */
    static List<String> statementsOf(String file) {
        String text;
        try (InputStream in = NexmarkQuery.class.getResourceAsStream("/nexmark/" + file)) {
            if (in == null) {
                throw new IllegalArgumentException("no /nexmark/" + file + " on the classpath");
            }
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : text.split("\n")) {
            if (line.trim().startsWith("--")) {
                continue;
            }
            current.append(line).append('\n');
            if (line.trim().endsWith(";")) {
                String s = current.toString().trim();
                statements.add(s.substring(0, s.length() - 1).trim());
                current.setLength(0);
            }
        }
        if (!current.toString().isBlank()) {
            statements.add(current.toString().trim());
        }
        return statements;
    }
}
