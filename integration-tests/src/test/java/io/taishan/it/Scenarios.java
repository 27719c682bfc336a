package io.taishan.it;

import io.taishan.it.job.EventSchedule;
import io.taishan.it.job.KeyStateFunction;
import java.time.Duration;

/** The input and pace shared by the scenarios. */
final class Scenarios {
    /**
     * 128 keys spread over the 128 key groups, 200 records each (20 event-time windows), in 8
     * splits: enough splits for every parallelism used, few enough keys per split that each key
     * moves on in every short run.
     */
    static final EventSchedule SCHEDULE = new EventSchedule(128, 200, 8);

    /**
     * 2.5 records per key and second: slow enough that all the interrupted runs of a scenario
     * together use about a third of the input (a split lasts 80 s at this pace), so no run reaches
     * the end of its input by accident.
     */
    static final double SLOW = 40;

    static final double AS_FAST_AS_POSSIBLE = 0;

    /**
     * How long one run of each restore path keeps going after its restore: past {@link
     * KeyStateFunction#LOST_TIMER_MILLIS}, so that a processing-time timer the restore lost shows
     * in the final state.
     */
    static final Duration LONG_RUN =
            Duration.ofMillis(KeyStateFunction.LOST_TIMER_MILLIS).plusSeconds(1);

    private Scenarios() {}
}
