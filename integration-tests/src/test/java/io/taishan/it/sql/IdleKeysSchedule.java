package io.taishan.it.sql;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.types.Row;

/**
 * The input of the idle-state scenario as a pure function of the round: every {@link #ROUND_MILLIS}
 * each present key sends its rows. Active keys ({@code act-NN}) are present in every round; silent
 * keys ({@code sil-NN}) go quiet for {@link #SILENT_ROUNDS} rounds, many TTLs, and then come back:
 * a returning key must start from nothing. Some streams are sparse on purpose, so that every TTL
 * boundary falls seconds away from any row, whatever the machine's timing:
 *
 * <ul>
 *   <li>{@code E}: every present key, every round (group aggregation, OVER aggregation);
 *   <li>{@code L}: phase 0 of 20 rounds (phases start after {@link #WARM_UP_ROUNDS}); {@code R}:
 *       phases 0, 1, 10 (the join: R rows of phases 0–1 meet the L row of phase 0, that of phase 10
 *       finds it expired, and has expired itself when the next L row comes);
 *   <li>{@code D}: phases 0, 1 (deduplication keeps each phase-0 row);
 *   <li>{@code HL}, {@code HR}: as L and R for the join with two TTLs, keys {@code hact-NN} and
 *       {@code hsil-NN} (so that its long-lived state is told apart from the rest).
 * </ul>
 *
 * Rows: {@code (src, key, v, rnd)}.
 */
public final class IdleKeysSchedule implements Serializable {
    private static final long serialVersionUID = 1L;

    /** With a TTL of 3 s, every TTL boundary is at least 2 s from the rows on either side of it. */
    public static final long ROUND_MILLIS = 500;

    public static final int ROUNDS = 50;
    public static final int KEYS = 8;
    public static final int SILENT_FROM = 10;
    public static final int SILENT_ROUNDS = 24;
    public static final int WARM_UP_ROUNDS = 4;

    private IdleKeysSchedule() {}

    public static boolean present(boolean silentKey, int round) {
        return !silentKey || round < SILENT_FROM || round >= SILENT_FROM + SILENT_ROUNDS;
    }

    public static String key(boolean silentKey, int k) {
        return String.format("%s-%02d", silentKey ? "sil" : "act", k);
    }

    /** The rows of one round, in emission order. */
    public static List<Row> round(int round) {
        List<Row> rows = new ArrayList<>();
        // The first epoch of the sparse streams starts 2 s in: a job's first rows can be handled
        // late while its JVM is cold (class loading, first RPCs), which would shift their TTL
        // timestamps by more than the margins below.
        int phase = Math.floorMod(round - WARM_UP_ROUNDS, 20);
        for (int s = 0; s < 2; s++) {
            boolean silent = s == 1;
            if (!present(silent, round)) {
                continue;
            }
            for (int k = 0; k < KEYS; k++) {
                String key = key(silent, k);
                long v = round * 100L + k;
                // A new distinct value each round: COUNT(DISTINCT) keeps one map entry per value,
                // written once, so its TTL runs out while the key is active; with every value new
                // the count does not depend on when that happens.
                rows.add(Row.of("E", key, v, round));
                if (phase == 0) {
                    rows.add(Row.of("L", key, v, 0));
                    rows.add(Row.of("HL", "h" + key.replace("-", ""), v, 0));
                }
                if (phase <= 1 || phase == 10) {
                    rows.add(Row.of("R", key, v, 0));
                    rows.add(Row.of("HR", "h" + key.replace("-", ""), v, 0));
                }
                if (phase <= 1) {
                    rows.add(Row.of("D", key, v, phase));
                }
            }
        }
        return rows;
    }
}
