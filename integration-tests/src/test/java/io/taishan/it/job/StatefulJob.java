package io.taishan.it.job;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The job under test: {@link KeyRangeSource}, keyed by the record's key, {@link KeyStateFunction},
 * {@link FinalStateSink}. Stable uids, so any run restores any other run's checkpoint or savepoint
 * whatever its parallelism or rate.
 */
public final class StatefulJob {
    public static final String SOURCE_UID = "key-range-source";
    public static final String STATE_UID = "key-state";
    public static final String SINK_UID = "final-state-sink";

    private StatefulJob() {}

    /**
     * @param runId where the operators report, see {@link JobRecorder}, and the source's {@link
     *     SourceGate}
     * @param recordsPerSecondPerSplit the source's pace; {@code <= 0} for as fast as possible
     */
    public static void define(
            StreamExecutionEnvironment env,
            String runId,
            EventSchedule schedule,
            double recordsPerSecondPerSplit) {
        env.fromSource(
                        new KeyRangeSource(schedule, recordsPerSecondPerSplit, runId),
                        WatermarkStrategy.<Event>forMonotonousTimestamps()
                                .withTimestampAssigner((event, previous) -> event.timestamp),
                        "key-range-source")
                .uid(SOURCE_UID)
                .keyBy(event -> event.key, Types.LONG)
                .transform(
                        "key-state",
                        KeyFinalState.TYPE,
                        new RecordingKeyedProcessOperator<>(runId, new KeyStateFunction()))
                .uid(STATE_UID)
                .sinkTo(new FinalStateSink(runId))
                .uid(SINK_UID)
                .name("final-state-sink");
    }
}
