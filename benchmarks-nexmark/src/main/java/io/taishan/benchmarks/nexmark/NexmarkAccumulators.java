package io.taishan.benchmarks.nexmark;

/** The accumulators through which a run's job reports to {@link NexmarkRun}. */
public final class NexmarkAccumulators {
    /** Events the source made (a {@code LongCounter}). */
    public static final String EVENTS = "nexmark.events";

    /** Wall-clock ms when the first source subtask made its first event (a {@code LongMinimum}). */
    public static final String FIRST_EVENT_MILLIS = "nexmark.first-event-millis";

    /** Changelog rows the sink received (a {@code LongCounter}). */
    public static final String CHANGES = "result.changes";

    /** Rows in the materialized result: +1 per insert or update-after, -1 per retraction. */
    public static final String ROWS = "result.rows";

    /** The result's multiset digest, high and low 64 bits ({@code ResultDigest}). */
    public static final String DIGEST_HIGH = "result.digest-high";

    public static final String DIGEST_LOW = "result.digest-low";

    /**
     * Wall-clock ms when the last sink subtask had received its whole input (a {@code
     * LongMaximum}).
     */
    public static final String SINK_FINISHED_MILLIS = "result.finished-millis";

    private NexmarkAccumulators() {}
}
