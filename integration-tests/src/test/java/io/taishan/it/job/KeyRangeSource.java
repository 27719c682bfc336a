package io.taishan.it.job;

import java.util.ArrayList;
import java.util.List;
import javax.annotation.Nullable;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A bounded FLIP-27 source over an {@link EventSchedule}. Its position is exact in every checkpoint
 * and savepoint (the enumerator keeps the unassigned splits, each reader its splits with their
 * positions), so a restored job continues with exactly the next record, at any parallelism.
 */
public final class KeyRangeSource implements Source<Event, KeyRangeSplit, List<KeyRangeSplit>> {
    private static final long serialVersionUID = 1L;

    private final EventSchedule schedule;
    private final double recordsPerSecondPerSplit;
    @Nullable private final String gate;

    /**
     * @param recordsPerSecondPerSplit {@code <= 0} means as fast as possible
     * @param gate the run id whose {@link SourceGate} may hold the readers, or null
     */
    public KeyRangeSource(
            EventSchedule schedule, double recordsPerSecondPerSplit, @Nullable String gate) {
        this.schedule = schedule;
        this.recordsPerSecondPerSplit = recordsPerSecondPerSplit;
        this.gate = gate;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.BOUNDED;
    }

    @Override
    public SourceReader<Event, KeyRangeSplit> createReader(SourceReaderContext readerContext) {
        return new KeyRangeReader(recordsPerSecondPerSplit, gate);
    }

    @Override
    public SplitEnumerator<KeyRangeSplit, List<KeyRangeSplit>> createEnumerator(
            SplitEnumeratorContext<KeyRangeSplit> enumContext) {
        List<KeyRangeSplit> all = new ArrayList<>(schedule.splitCount());
        for (int i = 0; i < schedule.splitCount(); i++) {
            all.add(schedule.split(i));
        }
        return new KeyRangeEnumerator(enumContext, all);
    }

    @Override
    public SplitEnumerator<KeyRangeSplit, List<KeyRangeSplit>> restoreEnumerator(
            SplitEnumeratorContext<KeyRangeSplit> enumContext, List<KeyRangeSplit> checkpoint) {
        return new KeyRangeEnumerator(enumContext, checkpoint);
    }

    @Override
    public SimpleVersionedSerializer<KeyRangeSplit> getSplitSerializer() {
        return KeyRangeSplitSerializer.splits();
    }

    @Override
    public SimpleVersionedSerializer<List<KeyRangeSplit>> getEnumeratorCheckpointSerializer() {
        return KeyRangeSplitSerializer.splitLists();
    }
}
