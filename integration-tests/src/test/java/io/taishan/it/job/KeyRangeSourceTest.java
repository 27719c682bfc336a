package io.taishan.it.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.core.io.InputStatus;
import org.junit.jupiter.api.Test;

/** The source's promises that the scenarios rely on, checked without a cluster. */
class KeyRangeSourceTest {
    private static final EventSchedule SCHEDULE = new EventSchedule(10, 7, 3);

    @Test
    void splitsCoverEveryKeyOnce() {
        Set<Long> keys = new HashSet<>();
        long records = 0;
        for (int i = 0; i < SCHEDULE.splitCount(); i++) {
            KeyRangeSplit split = SCHEDULE.split(i);
            records += split.size();
            for (int k = 0; k < split.keyCount(); k++) {
                assertThat(keys.add((long) split.firstKey() + k)).isTrue();
            }
        }
        assertThat(keys).hasSize(SCHEDULE.keyCount());
        assertThat(records).isEqualTo(SCHEDULE.totalRecords());
    }

    @Test
    void eachKeyArrivesInSequenceOrderWithMonotonicTimePerSplit() throws Exception {
        CollectingOutput output = new CollectingOutput();
        KeyRangeReader reader = readerWithAllSplits();
        drain(reader, output, Integer.MAX_VALUE);

        assertThat(output.events).hasSize((int) SCHEDULE.totalRecords());
        Map<Long, Integer> nextSeq = new HashMap<>();
        for (Event event : output.events) {
            assertThat(event.seq).isEqualTo(nextSeq.getOrDefault(event.key, 0));
            nextSeq.put(event.key, event.seq + 1);
            assertThat(event.value).isEqualTo(EventSchedule.value(event.key, event.seq));
        }
        output.eventsBySplit
                .values()
                .forEach(
                        events -> {
                            for (int i = 1; i < events.size(); i++) {
                                assertThat(events.get(i).timestamp)
                                        .isGreaterThanOrEqualTo(events.get(i - 1).timestamp);
                            }
                        });
        assertThat(output.releasedSplits).hasSize(SCHEDULE.splitCount());
    }

    @Test
    void restoredReaderContinuesWithExactlyTheNextRecord() throws Exception {
        CollectingOutput uninterrupted = new CollectingOutput();
        drain(readerWithAllSplits(), uninterrupted, Integer.MAX_VALUE);

        CollectingOutput first = new CollectingOutput();
        KeyRangeReader reader = readerWithAllSplits();
        drain(reader, first, 25);
        List<KeyRangeSplit> snapshot = roundTrip(reader.snapshotState(1));
        reader.close();

        CollectingOutput second = new CollectingOutput();
        KeyRangeReader restored = new KeyRangeReader(0, null);
        restored.start();
        restored.addSplits(snapshot);
        restored.notifyNoMoreSplits();
        drain(restored, second, Integer.MAX_VALUE);

        List<Event> resumed = new ArrayList<>(first.events);
        resumed.addAll(second.events);
        assertThat(resumed).containsExactlyElementsOf(uninterrupted.events);
    }

    @Test
    void enumeratorStateRoundTrips() throws Exception {
        List<KeyRangeSplit> splits = List.of(SCHEDULE.split(0), SCHEDULE.split(2).advance());
        byte[] bytes = KeyRangeSplitSerializer.splitLists().serialize(splits);
        assertThat(KeyRangeSplitSerializer.splitLists().deserialize(1, bytes))
                .containsExactlyElementsOf(splits);
    }

    private static KeyRangeReader readerWithAllSplits() {
        KeyRangeReader reader = new KeyRangeReader(0, null);
        reader.start();
        List<KeyRangeSplit> splits = new ArrayList<>();
        for (int i = 0; i < SCHEDULE.splitCount(); i++) {
            splits.add(SCHEDULE.split(i));
        }
        reader.addSplits(splits);
        reader.notifyNoMoreSplits();
        return reader;
    }

    private static List<KeyRangeSplit> roundTrip(List<KeyRangeSplit> splits) throws Exception {
        List<KeyRangeSplit> copies = new ArrayList<>();
        for (KeyRangeSplit split : splits) {
            byte[] bytes = KeyRangeSplitSerializer.splits().serialize(split);
            copies.add(KeyRangeSplitSerializer.splits().deserialize(1, bytes));
        }
        return copies;
    }

    private static void drain(KeyRangeReader reader, CollectingOutput output, int maxRecords)
            throws Exception {
        while (output.events.size() < maxRecords) {
            InputStatus status = reader.pollNext(output);
            if (status == InputStatus.END_OF_INPUT) {
                return;
            }
            assertThat(status).isEqualTo(InputStatus.MORE_AVAILABLE);
        }
    }

    /** Flink's ReaderOutput contract, recording what the reader emits per split. */
    private static final class CollectingOutput implements ReaderOutput<Event> {
        final List<Event> events = new ArrayList<>();
        final Map<String, List<Event>> eventsBySplit = new HashMap<>();
        final Set<String> releasedSplits = new HashSet<>();

        @Override
        public void collect(Event record) {
            events.add(record);
        }

        @Override
        public void collect(Event record, long timestamp) {
            events.add(record);
        }

        @Override
        public void emitWatermark(Watermark watermark) {}

        @Override
        public void markIdle() {}

        @Override
        public void markActive() {}

        @Override
        public SourceOutput<Event> createOutputForSplit(String splitId) {
            return new SourceOutput<>() {
                @Override
                public void collect(Event record) {
                    events.add(record);
                    eventsBySplit.computeIfAbsent(splitId, id -> new ArrayList<>()).add(record);
                }

                @Override
                public void collect(Event record, long timestamp) {
                    collect(record);
                }

                @Override
                public void emitWatermark(Watermark watermark) {}

                @Override
                public void markIdle() {}

                @Override
                public void markActive() {}
            };
        }

        @Override
        public void releaseOutputForSplit(String splitId) {
            releasedSplits.add(splitId);
        }
    }
}
