package io.taishan.it.job;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;

/**
 * Hands every split out once, all at reader registration, so that a reader holds all its splits
 * from the start and reads them interleaved: a split handed out later would start behind the
 * reader's watermark and its records would be late. Only splits not yet handed out are its state;
 * handed-out splits live (with their position) in the readers' state.
 */
final class KeyRangeEnumerator implements SplitEnumerator<KeyRangeSplit, List<KeyRangeSplit>> {
    private final SplitEnumeratorContext<KeyRangeSplit> context;
    private final List<KeyRangeSplit> unassigned;
    private final Map<Integer, List<KeyRangeSplit>> returnedBySubtask = new HashMap<>();

    KeyRangeEnumerator(
            SplitEnumeratorContext<KeyRangeSplit> context, List<KeyRangeSplit> unassigned) {
        this.context = context;
        this.unassigned = new ArrayList<>(unassigned);
    }

    @Override
    public void start() {}

    @Override
    public void handleSplitRequest(int subtaskId, String requesterHostname) {}

    @Override
    public void addSplitsBack(List<KeyRangeSplit> splits, int subtaskId) {
        // Splits handed out after the last checkpoint, returned on a failover of that reader: it
        // registers again, and addReader gives them back to the same subtask.
        returnedBySubtask.computeIfAbsent(subtaskId, id -> new ArrayList<>()).addAll(splits);
    }

    @Override
    public void addReader(int subtaskId) {
        int parallelism = context.currentParallelism();
        for (Iterator<KeyRangeSplit> it = unassigned.iterator(); it.hasNext(); ) {
            KeyRangeSplit split = it.next();
            if (split.index() % parallelism == subtaskId) {
                context.assignSplit(split, subtaskId);
                it.remove();
            }
        }
        for (KeyRangeSplit split : returnedBySubtask.getOrDefault(subtaskId, List.of())) {
            context.assignSplit(split, subtaskId);
        }
        returnedBySubtask.remove(subtaskId);
        context.signalNoMoreSplits(subtaskId);
    }

    @Override
    public List<KeyRangeSplit> snapshotState(long checkpointId) {
        List<KeyRangeSplit> state = new ArrayList<>(unassigned);
        returnedBySubtask.values().forEach(state::addAll);
        return state;
    }

    @Override
    public void close() {}
}
