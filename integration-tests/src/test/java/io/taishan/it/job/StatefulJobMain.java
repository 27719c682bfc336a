package io.taishan.it.job;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.JobID;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * {@link StatefulJob} as a program that {@code flink run} starts: {@code --run-id ID --keys K
 * --records-per-key R --splits S}; everything else (backend, checkpointing, restore) comes from
 * Flink's configuration and the command line, as for a user's job. Submits without waiting ({@code
 * flink run -d}) and leaves the job id where the test finds it; the test shares this JVM and this
 * class loader (the job jar holds no classes, so Flink's child-first loader finds them all here).
 */
public final class StatefulJobMain {
    private static final Map<String, JobID> SUBMITTED = new ConcurrentHashMap<>();

    private StatefulJobMain() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new ConcurrentHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --option value, got " + args[i]);
            }
            options.put(args[i].substring(2), args[i + 1]);
        }
        String runId = required(options, "run-id");
        EventSchedule schedule =
                new EventSchedule(
                        Integer.parseInt(required(options, "keys")),
                        Integer.parseInt(required(options, "records-per-key")),
                        Integer.parseInt(required(options, "splits")));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        StatefulJob.define(env, runId, schedule, 0);
        SUBMITTED.put(runId, env.executeAsync("stateful-job " + runId).getJobID());
    }

    /** The job that {@link #main} submitted for that run. */
    public static JobID submitted(String runId) {
        JobID id = SUBMITTED.get(runId);
        if (id == null) {
            throw new AssertionError("no job was submitted for run " + runId);
        }
        return id;
    }

    private static String required(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return value;
    }
}
