package io.taishan.snapshot;

import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.jobgraph.OperatorID;

/** An operator's state in checkpoint metadata, made as Flink 1.20's constructor wants it. */
public final class TestOperatorStates {
    private TestOperatorStates() {}

    public static OperatorState of(OperatorID operatorId, int parallelism, int maxParallelism) {
        return new OperatorState(operatorId, parallelism, maxParallelism);
    }
}
