package io.taishan.dist.job;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;

/**
 * Flink's own {@code KeyedProcessOperator} that also writes, per subtask and attempt, which keyed
 * state backend it got and from which jar that class came: a test proves that the backend named in
 * the cluster's configuration ran, loaded from the plugin jar in Flink's class path.
 */
final class RecordingKeyedProcessOperator<IN, OUT> extends KeyedProcessOperator<Long, IN, OUT> {
    private static final long serialVersionUID = 1L;

    private final String dir;

    RecordingKeyedProcessOperator(KeyedProcessFunction<Long, IN, OUT> function, String dir) {
        super(function);
        this.dir = dir;
    }

    @Override
    public void open() throws Exception {
        super.open();
        Class<?> backend = getKeyedStateBackend().getClass();
        var source = backend.getProtectionDomain().getCodeSource();
        String line =
                backend.getName() + " " + (source == null ? "?" : source.getLocation()) + "\n";
        Path out = Files.createDirectories(Path.of(dir));
        Files.writeString(
                out.resolve(
                        "subtask-"
                                + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask()
                                + "-attempt-"
                                + getRuntimeContext().getTaskInfo().getAttemptNumber()),
                line,
                StandardCharsets.UTF_8);
    }
}
