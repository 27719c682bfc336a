package io.taishan.it.job;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

/**
 * Everything {@link KeyStateFunction} holds for one key, as it stands when the input has ended: the
 * thing two runs of the job are compared by. A Flink POJO with explicit field types, so maps and
 * lists travel without Kryo.
 */
public class KeyFinalState {
    public static final TypeInformation<KeyFinalState> TYPE =
            Types.POJO(
                    KeyFinalState.class,
                    Map.of(
                            "key", Types.LONG,
                            "count", Types.LONG,
                            "sum", Types.LONG,
                            "lastSeq", Types.INT,
                            "seqViolations", Types.LONG,
                            "overdueDrainTimers", Types.LONG,
                            "histogram", Types.MAP(Types.LONG, Types.LONG),
                            "closedWindows", Types.LIST(Types.STRING),
                            "openWindowSums", Types.MAP(Types.LONG, Types.LONG)));

    public long key;

    /** ValueState: records seen. */
    public long count;

    /** ValueState: sum of their values. */
    public long sum;

    /** ValueState: sequence number of the last record. */
    public int lastSeq;

    /** ValueState: records that did not carry the next sequence number (lost or replayed). */
    public long seqViolations;

    /** ValueState: records that found the drain timer long overdue, i.e. lost. */
    public long overdueDrainTimers;

    /** MapState, filled by processing-time timers from a ListState: value bucket to count. */
    public Map<Long, Long> histogram;

    /** ListState, appended by event-time timers in firing order: {@code "w<window>=<sum>"}. */
    public List<String> closedWindows;

    /** MapState: sums of windows whose timer has not fired (empty at the end of the input). */
    public Map<Long, Long> openWindowSums;

    public KeyFinalState() {}

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof KeyFinalState)) {
            return false;
        }
        KeyFinalState that = (KeyFinalState) o;
        return key == that.key
                && count == that.count
                && sum == that.sum
                && lastSeq == that.lastSeq
                && seqViolations == that.seqViolations
                && overdueDrainTimers == that.overdueDrainTimers
                && Objects.equals(histogram, that.histogram)
                && Objects.equals(closedWindows, that.closedWindows)
                && Objects.equals(openWindowSums, that.openWindowSums);
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, count, sum, lastSeq, histogram, closedWindows);
    }

    @Override
    public String toString() {
        return "KeyFinalState{key="
                + key
                + ", count="
                + count
                + ", sum="
                + sum
                + ", lastSeq="
                + lastSeq
                + ", seqViolations="
                + seqViolations
                + ", overdueDrainTimers="
                + overdueDrainTimers
                + ", histogram="
                + histogram
                + ", closedWindows="
                + closedWindows
                + ", openWindowSums="
                + openWindowSums
                + '}';
    }
}
