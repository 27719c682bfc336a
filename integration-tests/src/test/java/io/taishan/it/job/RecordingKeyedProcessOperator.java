package io.taishan.it.job;

import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Flink's own {@code KeyedProcessOperator} that also reports which keyed state backend it got, so a
 * test proves the backend named in the configuration is the one that held the state, and what that
 * backend's metrics said right after its restore ({@link OpenedSubtask}).
 */
final class RecordingKeyedProcessOperator<IN, OUT> extends KeyedProcessOperator<Long, IN, OUT> {
    private static final long serialVersionUID = 1L;

    private final String runId;

    RecordingKeyedProcessOperator(String runId, KeyedProcessFunction<Long, IN, OUT> function) {
        super(function);
        this.runId = runId;
    }

    @Override
    public void open() throws Exception {
        // Before super.open(): the backend is restored, but no timer service is started and no
        // state is registered yet, so whatever it wrote, its restore wrote.
        int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        KeyGroupRange keyGroups =
                KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                        getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks(),
                        getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks(),
                        subtask);
        JobRecorder.recordOpened(
                runId, subtask, keyGroups.getNumberOfKeyGroups(), getMetricGroup());
        JobRecorder.recordAttempt(runId, getRuntimeContext().getTaskInfo().getAttemptNumber());
        super.open();
        JobRecorder.recordKeyedBackend(runId, getKeyedStateBackend().getClass().getName());
    }

    @Override
    public void processElement(StreamRecord<IN> element) throws Exception {
        JobRecorder.recordProcessed(runId);
        super.processElement(element);
    }

    @Override
    public void onEventTime(InternalTimer<Long, VoidNamespace> timer) throws Exception {
        JobRecorder.recordActivity(runId);
        super.onEventTime(timer);
    }

    @Override
    public void onProcessingTime(InternalTimer<Long, VoidNamespace> timer) throws Exception {
        JobRecorder.recordActivity(runId);
        super.onProcessingTime(timer);
    }
}
